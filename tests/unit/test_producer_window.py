"""producerMaxInFlight: the producer loop's window, seen from outside the loop.

Each check counts in-flight messages at the producer boundary (what was handed to ``send`` and
not yet called back), not with the loop's own counters.
"""

import threading
import time

import pytest
from tests.unit.test_producer_loop import LateAcks

import loadgen
from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.driver_api import CallbackAcks
from loadgen.engine import producer_loop
from loadgen.engine.producer_loop import ProducerLoop


class Counted:
    """Counts a producer's messages in flight as the client sees them; keeps the peak."""

    def __init__(self):
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.sent = 0

    def wrap(self, on_done):
        with self.lock:
            self.in_flight += 1
            self.sent += 1
            self.peak = max(self.peak, self.in_flight)

        def done(*result):
            with self.lock:
                self.in_flight -= 1
            on_done(*result)

        return done


class PolledAcks(LateAcks):
    """Acks delivered inside ``poll``, 300 µs after the send (as Kafka and RabbitMQ do)."""

    def __init__(self):
        super().__init__()
        self.count = Counted()

    def send(self, key, payload, on_done, message_id, intended_ns):
        super().send(key, payload, self.count.wrap(on_done), message_id, intended_ns)


class ThreadAcks(CallbackAcks):
    """Acks from a thread of the client's own, 200 µs after the send (as Pulsar does)."""

    ACK_AFTER_S = 0.0002

    def __init__(self):
        super().__init__()
        self.count = Counted()

    def send(self, key, payload, on_done, message_id, intended_ns):
        self.sent += 1
        done = self.count.wrap(on_done)
        threading.Timer(self.ACK_AFTER_S, self._ack, (done,)).start()

    def _ack(self, done):
        self.completed += 1
        done(None)

    def close(self):
        pass


def run_windowed(producers, window, recorder_class, rate=100_000, seconds=0.5):
    recorder = recorder_class()
    bases = [i << 40 for i in range(len(producers))]
    loop = ProducerLoop(producers, [b"x"], None, rate, recorder, bases, max_in_flight=window)
    loop.start()
    time.sleep(seconds)
    loop.stop()
    assert loop.error is None
    for producer in producers:
        producer.flush(1.0)
    return recorder.take()


@pytest.mark.parametrize("window", [1, 3])
def test_acks_delivered_in_poll_keep_each_producer_within_its_window(window, producer_recorder):
    producers = [PolledAcks(), PolledAcks()]
    sample = run_windowed(producers, window, producer_recorder)
    for producer in producers:
        assert producer.count.peak == window  # reached, never passed
        assert producer.count.sent > 100
    assert sample.publish.total == sum(p.count.sent for p in producers) - sum(
        len(p.pending) for p in producers
    )


@pytest.mark.parametrize("window", [1, 3])
def test_acks_from_the_clients_thread_keep_each_producer_within_its_window(
    window, producer_recorder
):
    producers = [ThreadAcks(), ThreadAcks()]
    run_windowed(producers, window, producer_recorder)
    for producer in producers:
        assert producer.count.peak == window


def test_an_ack_from_the_clients_thread_wakes_the_loop_at_once(monkeypatch, producer_recorder):
    """With a full window the loop waits in slices of ``MAX_WAIT_S``; stretched to 50 ms, a loop
    that slept its slices out would send at most ~11 messages in 0.5 s, one woken by each ack
    sends hundreds. The margin is a factor of ten, not the machine's scheduling latency."""
    monkeypatch.setattr(producer_loop, "MAX_WAIT_S", 0.05)
    producer = ThreadAcks()
    run_windowed([producer], 1, producer_recorder)
    assert producer.count.sent > 110


def test_a_rate_the_window_cannot_carry_shows_as_publish_delay(producer_recorder):
    producer = PolledAcks()  # one message per ~0.3 ms at most: ~3k msg/s
    sample = run_windowed([producer], 1, producer_recorder, rate=20_000, seconds=0.5)
    assert producer.count.peak == 1
    assert sample.publish_delay.max > 100_000  # µs: > 0.1 s behind the schedule by the end
    median = hdr.value_at_percentile(sample.publish, 50)
    assert 300 <= median < 1_000  # µs: each message's own latency stays the ack delay


SYNCHRONOUS = {
    "topics": 1,
    "partitionsPerTopic": 1,
    "messageSize": 64,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 2,
    "producerRate": 2000,
    "producerMaxInFlight": 1,
    "testDurationMinutes": 1,
}


def test_synchronous_runs_on_the_memory_driver_report_from_the_workload_field():
    result = loadgen.run(
        SYNCHRONOUS,
        loadgen.driver("memory"),
        duration=1,
        warmup=0,
    )
    assert result.sent == result.received > 1500
    assert result.document["run"]["workload"]["producerMaxInFlight"] == 1


def test_the_window_must_allow_one_message():
    with pytest.raises(ConfigError) as caught:
        loadgen.workload(**(SYNCHRONOUS | {"producerMaxInFlight": 0}))
    assert caught.value.path == "producerMaxInFlight"
