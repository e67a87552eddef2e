import threading
import time

from loadgen.recorder import ConsumerRecorder, ProducerRecorder


def test_producer_recorder_measures_from_send_and_from_intended_time():
    recorder = ProducerRecorder()
    now = time.perf_counter_ns()
    recorder.on_done(now - 5_000_000, now - 1_000_000, None, "client extra arg")
    recorder.on_done(now, now, RuntimeError("nack"))
    sample = recorder.take()
    assert len(sample.publish) == 1 and sample.publish[0] >= 1_000_000
    assert sample.publish_from_intended[0] >= 5_000_000
    assert sample.errors == 1
    assert recorder.take().errors == 0  # errors are reported once


def test_consumer_recorder_counts_bytes_once_per_take():
    recorder = ConsumerRecorder()
    recorder.on_message(b"x" * 100, time.time_ns() - 2_000_000)
    first = recorder.take()
    assert first.received_bytes == 100
    assert first.end_to_end[0] >= 2_000_000
    assert recorder.take().received_bytes == 0


def test_take_while_writers_append_loses_and_duplicates_nothing():
    recorder = ConsumerRecorder()
    per_writer, writers = 200_000, 3
    taken = []
    done = threading.Event()

    def write():
        for _ in range(per_writer):
            recorder.on_message(b"p", 0)

    def read():
        while not done.is_set():
            taken.append(len(recorder.take().end_to_end))
        taken.append(len(recorder.take().end_to_end))

    reader = threading.Thread(target=read)
    threads = [threading.Thread(target=write) for _ in range(writers)]
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    assert sum(taken) == per_writer * writers
    assert len([n for n in taken if n]) > 1  # the reader really swapped mid-stream
