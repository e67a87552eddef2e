"""The recorders, both engines: what they record, and that a take never splits a message."""

import shutil
import threading
import time

import pytest

from loadgen import recorder as recorders


def test_the_c_engine_is_built_where_a_c_compiler_is():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the pure-Python engine is the one")
    assert recorders._hotpath is not None, "pip install did not build loadgen._hotpath"


@pytest.mark.skipif(recorders._hotpath is None, reason="loadgen._hotpath is not built")
def test_the_c_engine_reads_the_clocks_python_reads():
    for python_clock, c_clock in (
        (time.perf_counter_ns, recorders._hotpath.perf_counter_ns),
        (time.time_ns, recorders._hotpath.time_ns),
    ):
        before = python_clock()
        between = c_clock()
        after = python_clock()
        assert before <= between <= after


def test_bind_records_the_publish_delay_and_its_ack_the_rest(producer_recorder):
    recorder = producer_recorder()
    now = time.perf_counter_ns()
    first = recorder.bind(7, now - 5_000_000, now - 1_000_000)
    second = recorder.bind(8, now - 2_000, now)
    assert recorder.acked_count == 0
    first(None, "the client's own argument")
    second(RuntimeError("nack"))
    after = time.perf_counter_ns()
    assert recorder.acked_count == 1
    sample = recorder.take()
    assert list(sample.publish_delay) == [4_000_000, 2_000]  # one per message sent
    assert 1_000_000 <= sample.publish[0] <= after - now + 1_000_000
    assert 5_000_000 <= sample.publish_from_intended[0] <= after - now + 5_000_000
    assert list(sample.acked) == [7]
    assert sample.errors == 1
    assert recorder.take().errors == 0


def test_producer_recorder_measures_from_send_and_from_intended_time(producer_recorder):
    recorder = producer_recorder()
    now = time.perf_counter_ns()
    recorder.on_done(7, now - 5_000_000, now - 1_000_000, None, "client extra arg")
    recorder.on_done(8, now, now, RuntimeError("nack"))
    sample = recorder.take()
    assert len(sample.publish) == 1 and sample.publish[0] >= 1_000_000
    assert sample.publish_from_intended[0] >= 5_000_000
    assert list(sample.acked) == [7]  # the failed send is an error, not an acknowledged id
    assert sample.errors == 1
    assert recorder.take().errors == 0  # errors are reported once


def test_consumer_recorder_counts_bytes_once_per_take(consumer_recorder):
    recorder = consumer_recorder()
    now = time.time_ns()
    recorder.on_message(b"x" * 100, now - 2_000_000, 42, now - 5_000_000, 3)
    first = recorder.take()
    assert first.received_bytes == 100 and first.received == 1
    e2e, from_intended, message_id, partition = first.deliveries
    assert e2e >= 2_000_000 and from_intended >= 5_000_000
    assert (message_id, partition) == (42, 3)
    assert recorder.take().received_bytes == 0


def taken_while_writing(take, write, writers):
    """Run ``write(writer)`` on ``writers`` threads while another calls ``take`` over and over
    (and once after they end); every sample it took."""
    taken = []
    done = threading.Event()

    def read():
        while not done.is_set():
            taken.append(take())
        taken.append(take())

    reader = threading.Thread(target=read)
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    return taken


def test_take_while_writers_append_loses_and_duplicates_nothing(consumer_recorder):
    recorder = consumer_recorder()
    per_writer, writers = 200_000, 3

    def write(_writer):
        for i in range(per_writer):
            recorder.on_message(b"p", -i, i, 0, i % 7)  # a latency that names its id

    taken = taken_while_writing(recorder.take, write, writers)
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


def test_acks_from_several_threads_while_taking_lose_and_split_nothing(producer_recorder):
    recorder = producer_recorder()
    per_writer, writers = 100_000, 3

    def write(writer):
        for i in range(per_writer):
            message_id = writer * per_writer + i
            recorder.bind(message_id, -message_id, 0)(None)  # ack - intended names the id

    taken = taken_while_writing(recorder.take, write, writers)
    assert len([s for s in taken if len(s.acked)]) > 1  # the reader really took mid-stream
    acked = [i for s in taken for i in s.acked]
    assert sorted(acked) == list(range(per_writer * writers))
    assert sum(len(s.publish_delay) for s in taken) == per_writer * writers
    assert sum(len(s.publish) for s in taken) == per_writer * writers
    if producer_recorder is recorders.CompiledProducerRecorder:
        # in C an ack's three values land in the same take, in the same place (in Python each
        # append is whole, but a take may fall between them: counts stay exact over takes)
        for sample in taken:
            assert len(sample.publish) == len(sample.publish_from_intended) == len(sample.acked)
            pairs = zip(sample.publish_from_intended, sample.publish, strict=True)
            assert [c - p for c, p in pairs] == list(sample.acked)
