import time

from drivers.memory import Driver
from loadgen.driver import TopicSpec
from loadgen.recorder import ProducerRecorder
from loadgen.spec.driver_spec import DriverSpec
from loadgen.worker.producer_loop import ProducerLoop


def run_loop(rate, seconds, keys=None, producers=2):
    driver = Driver.from_config(DriverSpec(name="mem", kind="memory"))
    driver.create_topics([TopicSpec("t", 2)])
    recorder = ProducerRecorder()
    loop = ProducerLoop(
        [driver.create_producer("t") for _ in range(producers)],
        [b"a" * 10, b"b" * 10],
        keys,
        rate,
        recorder,
    )
    loop.start()
    time.sleep(seconds)
    loop.stop()
    assert loop.error is None
    return recorder.take()


def test_loop_sends_at_the_target_rate():
    sample = run_loop(rate=2000, seconds=1.0)
    assert 1900 <= len(sample.publish) <= 2100
    assert len(sample.publish_delay) == len(sample.publish)


def test_loop_records_delay_from_the_intended_time_not_from_the_previous_send():
    sample = run_loop(rate=2000, seconds=0.5)
    # sleeps are coarse, so some messages go late, but never before their intended time
    assert min(sample.publish_delay) >= 0
    assert max(sample.publish_delay) < 50_000_000


def test_key_source_sees_the_send_time():
    seen = []

    def keys(now_ns):
        seen.append(now_ns)
        return b"k"

    sample = run_loop(rate=500, seconds=0.3, keys=keys)
    assert len(seen) == len(sample.publish) > 0
