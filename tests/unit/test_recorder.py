import threading
import time

from loadgen.recorder import ConsumerRecorder, ProducerRecorder


def test_producer_recorder_measures_from_send_and_from_intended_time():
    recorder = ProducerRecorder()
    now = time.perf_counter_ns()
    recorder.on_done(7, now - 5_000_000, now - 1_000_000, None, "client extra arg")
    recorder.on_done(8, now, now, RuntimeError("nack"))
    sample = recorder.take()
    assert len(sample.publish) == 1 and sample.publish[0] >= 1_000_000
    assert sample.publish_from_intended[0] >= 5_000_000
    assert list(sample.acked) == [7]  # the failed send is an error, not an acknowledged id
    assert sample.errors == 1
    assert recorder.take().errors == 0  # errors are reported once


def test_consumer_recorder_counts_bytes_once_per_take():
    recorder = ConsumerRecorder()
    now = time.time_ns()
    recorder.on_message(b"x" * 100, now - 2_000_000, 42, now - 5_000_000, 3)
    first = recorder.take()
    assert first.received_bytes == 100 and first.received == 1
    e2e, from_intended, message_id, partition = first.deliveries
    assert e2e >= 2_000_000 and from_intended >= 5_000_000
    assert (message_id, partition) == (42, 3)
    assert recorder.take().received_bytes == 0


def test_take_while_writers_append_loses_and_duplicates_nothing():
    recorder = ConsumerRecorder()
    per_writer, writers = 200_000, 3
    taken = []
    done = threading.Event()

    def write():
        for i in range(per_writer):
            recorder.on_message(b"p", -i, i, 0, i % 7)  # a latency that names its id

    def read():
        while not done.is_set():
            taken.append(recorder.take())
        taken.append(recorder.take())

    reader = threading.Thread(target=read)
    threads = [threading.Thread(target=write) for _ in range(writers)]
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    assert sum(sample.received for sample in taken) == per_writer * writers
    assert len([s for s in taken if s.received]) > 1  # the reader really swapped mid-stream
    rows = [list(s.deliveries) for s in taken]
    assert all(len(r) % 4 == 0 for r in rows)  # no delivery split over two takes
    ids = [i for r in rows for i in r[2::4]]
    assert len(ids) == per_writer * writers
    # every row's latency and partition belong to its id (the clock correction needs that)
    sent_at = [now - e2e for r in rows for now, e2e in zip(r[1::4], r[0::4], strict=True)]
    partitions = [p for r in rows for p in r[3::4]]
    assert all(p == i % 7 for i, p in zip(ids, partitions, strict=True))
    assert all(s == -i for i, s in zip(ids, sent_at, strict=True))
