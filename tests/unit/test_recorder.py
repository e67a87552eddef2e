"""The recorders, both engines: what they record, that a take never splits a message, and that
both take the same arguments and fail the same way, storing a row whole or not at all."""

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from drivers.memory import Driver
from loadgen import recorder as recorders
from loadgen.spec.driver_spec import DriverSpec
from loadgen.worker.local import LocalWorker

PYTHON_READS_THE_C_CLOCKS = (
    time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    and time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"
)
"""setup.py's condition for building the C engine: Python reads the clocks it reads."""


def test_the_c_engine_is_built_where_a_c_compiler_is():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the pure-Python engine is the one")
    if not PYTHON_READS_THE_C_CLOCKS:
        pytest.skip("Python's perf_counter or time is not the C engine's clock here")
    assert recorders._hotpath is not None, "pip install did not build loadgen._hotpath"


def test_the_c_engine_is_only_built_where_python_reads_its_clocks():
    if recorders._hotpath is None:
        pytest.skip("loadgen._hotpath is not built")
    assert time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    assert time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"


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


NACK = RuntimeError("nack")

# (positional, keyword) arguments of an acknowledgement, and what it records: an acknowledged
# id, an error, or nothing (TypeError, the message matching the pattern)
ACK_CALLS = [
    pytest.param((None,), {}, "acked", id="error None"),
    pytest.param((NACK,), {}, "error", id="error"),
    pytest.param((None, "the client's", "own arguments"), {}, "acked", id="client arguments"),
    pytest.param((NACK, "the client's"), {}, "error", id="error and client arguments"),
    pytest.param((), {"error": None}, "acked", id="error=None"),
    pytest.param((), {"error": NACK}, "error", id="error=exception"),
    pytest.param((), {}, "missing .*'error'", id="no error"),
    pytest.param((), {"foo": 1}, "unexpected keyword argument 'foo'", id="foo="),
    pytest.param((None,), {"foo": 1}, "unexpected keyword argument 'foo'", id="None, foo="),
    pytest.param((), {"error": None, "foo": 1}, "unexpected keyword", id="error=, foo="),
    pytest.param((None,), {"error": None}, "multiple values for argument 'error'", id="twice"),
    pytest.param((None,), {"message_id": 8}, "multiple values .*'message_id'", id="bound id"),
]


def recorded(sample) -> tuple[list[int], int]:
    """A producer sample's acknowledged ids and error count."""
    assert len(sample.publish) == len(sample.publish_from_intended) == len(sample.acked)
    return list(sample.acked), sample.errors


@pytest.mark.parametrize(("args", "kwargs", "outcome"), ACK_CALLS)
def test_an_ack_takes_its_arguments_as_on_done_does_in_both_engines(
    producer_recorder, args, kwargs, outcome
):
    recorder = producer_recorder()
    ack = recorder.bind(7, 0, 0)
    if outcome in ("acked", "error"):
        ack(*args, **kwargs)
    else:
        with pytest.raises(TypeError, match=outcome):
            ack(*args, **kwargs)
    expected = {"acked": ([7], 0), "error": ([], 1)}.get(outcome, ([], 0))
    sample = recorder.take()
    assert recorded(sample) == expected
    assert len(sample.publish_delay) == 1  # bound once, whatever the ack did


ON_DONE_CALLS = [
    pytest.param((7, 0, 0, None), {}, "acked", id="positional"),
    pytest.param((7, 0, 0, NACK, "client"), {}, "error", id="positional error"),
    pytest.param((7, 0, 0), {"error": None}, "acked", id="error="),
    pytest.param((7, 0), {"sent_ns": 0, "error": NACK}, "error", id="sent_ns=, error="),
    pytest.param(
        (), {"message_id": 7, "intended_ns": 0, "sent_ns": 0, "error": None}, "acked", id="all="
    ),
    pytest.param((7, 0, 0), {}, "missing .*'error'", id="no error"),
    pytest.param((7, 0, 0, None), {"error": None}, "multiple values", id="twice"),
    pytest.param((7, 0, 0, None), {"foo": 1}, "unexpected keyword argument 'foo'", id="foo="),
]


@pytest.mark.parametrize(("args", "kwargs", "outcome"), ON_DONE_CALLS)
def test_on_done_takes_the_same_arguments_in_both_engines(producer_recorder, args, kwargs, outcome):
    recorder = producer_recorder()
    if outcome in ("acked", "error"):
        recorder.on_done(*args, **kwargs)
    else:
        with pytest.raises(TypeError, match=outcome):
            recorder.on_done(*args, **kwargs)
    expected = {"acked": ([7], 0), "error": ([], 1)}.get(outcome, ([], 0))
    assert recorded(recorder.take()) == expected


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# calls that give or compute a value that is not an int64, the error both engines raise, and
# the publish delays they record (a bind that succeeds records its own, whatever its ack does)
PRODUCER_MISFITS = [
    pytest.param(lambda r, now: r.bind(INT64_MAX + 1, 0, 0), OverflowError, 0, id="bind id"),
    pytest.param(lambda r, now: r.bind(0, 0, INT64_MIN - 1), OverflowError, 0, id="bind sent"),
    pytest.param(lambda r, now: r.bind(0, INT64_MIN, INT64_MAX), OverflowError, 0, id="delay"),
    pytest.param(lambda r, now: r.bind(1.5, 0, 0), TypeError, 0, id="bind float id"),
    # the publish delay and the latency fit; ack - intended does not
    pytest.param(
        lambda r, now: r.bind(0, INT64_MIN, INT64_MIN // 2)(None), OverflowError, 1, id="ack"
    ),
    pytest.param(lambda r, now: r.on_done(2**63, now, now, None), OverflowError, 0, id="id"),
    pytest.param(lambda r, now: r.on_done(0, INT64_MIN, now, None), OverflowError, 0, id="late"),
    pytest.param(lambda r, now: r.on_done(0, now, 2**63, None), OverflowError, 0, id="sent"),
    pytest.param(lambda r, now: r.on_done(0, now, 2**63, NACK), OverflowError, 0, id="nack"),
    pytest.param(lambda r, now: r.on_done(0, now, "now", None), TypeError, 0, id="str sent"),
]


def a_snapshot_of(producer=None, consumer=None):
    """An interval a worker takes from these recorders (the reshape and binning it does)."""
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    [topic] = worker.create_topics(1, 1)
    worker.create_consumers([(topic, "sub")])
    worker.create_producers([topic])
    if producer is not None:
        worker._producer_recorder = producer
    if consumer is not None:
        worker._consumer_recorders[0] = consumer
    try:
        return worker.snapshot(0, 1000, warmup=False)
    finally:
        worker.close(delete_topics=True)


@pytest.mark.parametrize(("call", "error", "delays"), PRODUCER_MISFITS)
def test_a_producer_value_past_64_bits_stores_no_part_of_its_row(
    producer_recorder, call, error, delays
):
    recorder = producer_recorder()
    now = time.perf_counter_ns()
    recorder.bind(1, now - 2_000, now)(None)
    with pytest.raises(error):
        call(recorder, now)
    recorder.bind(2, now - 2_000, now)(None)
    stats = a_snapshot_of(producer=recorder)
    assert (stats.sent, stats.send_errors) == (2, 0)
    assert stats.histogram("publishDelay").total == 2 + delays


NOW = object()
"""Stands for the receive time in a delivery's arguments."""

# a delivery's arguments that give or compute a value that is not an int64, and the error
CONSUMER_MISFITS = [
    pytest.param((b"x", "now", 0, NOW, 0), TypeError, id="str sent"),
    pytest.param((b"x", NOW, INT64_MAX + 1, NOW, 0), OverflowError, id="id"),
    pytest.param((b"x", NOW, 0, NOW, INT64_MIN - 1), OverflowError, id="partition"),
    pytest.param((b"x", INT64_MIN, 0, NOW, 0), OverflowError, id="latency"),
    pytest.param((b"x", 2**63, 0, NOW, 0), OverflowError, id="sent"),  # its latency would fit
    pytest.param((b"x", NOW, 1.0, NOW, 0), TypeError, id="float id"),
    pytest.param((None, NOW, 0, NOW, 0), TypeError, id="payload without a length"),
]


@pytest.mark.parametrize(("arguments", "error"), CONSUMER_MISFITS)
def test_a_delivery_value_past_64_bits_stores_no_part_of_its_row(
    consumer_recorder, arguments, error
):
    recorder = consumer_recorder()
    now = time.time_ns()
    recorder.on_message(b"good", now - 1_000_000, 1, now - 1_000_000, 0)
    with pytest.raises(error):
        recorder.on_message(*(now if value is NOW else value for value in arguments))
    recorder.on_message(b"good", now - 1_000_000, 2, now - 1_000_000, 0)
    stats = a_snapshot_of(consumer=recorder)
    assert (stats.received, stats.bytes_received) == (2, 8)
    assert stats.histogram("endToEnd").total == 2


def test_take_hands_over_every_row_and_leaves_every_column_empty(
    producer_recorder, consumer_recorder
):
    producer, consumer = producer_recorder(), consumer_recorder()
    now = time.perf_counter_ns()
    for message_id in range(5):
        producer.bind(message_id, now, now)(None)
        producer.on_done(message_id, now, now, NACK)
        consumer.on_message(b"x", 0, message_id, 0, 0)
    produced, consumed = producer.take(), consumer.take()
    assert recorded(produced) == ([0, 1, 2, 3, 4], 5) and len(produced.publish_delay) == 5
    assert consumed.received == 5 and list(consumed.deliveries[2::4]) == [0, 1, 2, 3, 4]
    assert (producer.acked_count, consumer.received) == (0, 0)
    produced, consumed = producer.take(), consumer.take()
    assert recorded(produced) == ([], 0) and len(produced.publish_delay) == 0
    assert (consumed.received, consumed.received_bytes) == (0, 0)


def taken_with_allocations_failing_after(take, allocations: int) -> bool:
    """Call ``take()`` with every allocation from the ``allocations``-th on failing (CPython's
    own fault injection, ``_testcapi.set_nomemory``); whether it returned."""
    testcapi = pytest.importorskip("_testcapi")
    if threading.active_count() > 1:
        pytest.skip("another thread could run, and fail to allocate, while allocations fail")
    testcapi.set_nomemory(allocations, 0)
    try:
        take()
    except MemoryError:
        return False
    finally:
        testcapi.remove_mem_hooks()
    return True


def filled_producer(kind):
    recorder = kind()
    for message_id in range(5):
        recorder.bind(message_id, 0, 0)(None)
    return recorder


def filled_consumer(kind):
    recorder = kind()
    for message_id in range(5):
        recorder.on_message(b"x", 0, message_id, 0, 0)
    return recorder


def producer_columns(taken) -> list[int]:
    if isinstance(taken, tuple):  # the C core's own take(): four columns as bytes
        return [len(column) // 8 for column in taken]
    return [
        len(taken.publish),
        len(taken.publish_delay),
        len(taken.publish_from_intended),
        len(taken.acked),
    ]


def consumer_columns(taken) -> list[int]:
    return [len(taken) // 8 if isinstance(taken, bytes) else len(taken.deliveries)]


# the engines' own takes: the pure-Python recorders', the C cores' (a compiled recorder then
# wraps what its core handed over in memoryviews; a failure there loses that interval, but every
# column is empty alike)
TAKES = [
    pytest.param(
        recorders.PythonProducerRecorder, filled_producer, producer_columns, id="python producer"
    ),
    pytest.param(
        recorders.PythonConsumerRecorder, filled_consumer, consumer_columns, id="python consumer"
    ),
]
if recorders._hotpath is not None:
    TAKES += [
        pytest.param(
            recorders._hotpath.ProducerCore, filled_producer, producer_columns, id="c producer"
        ),
        pytest.param(
            recorders._hotpath.ConsumerCore, filled_consumer, consumer_columns, id="c consumer"
        ),
    ]


@pytest.mark.parametrize(("kind", "filled", "columns"), TAKES)
def test_a_take_that_runs_out_of_memory_leaves_every_column_as_it_was(kind, filled, columns):
    """Allocation by allocation, until take() gets all it needs: each failing take leaves every
    column whole, as the next take shows."""
    whole = columns(filled(kind).take())
    assert all(whole) and whole
    for allocations in range(100):
        recorder = filled(kind)
        if taken_with_allocations_failing_after(recorder.take, allocations):
            break
        assert columns(recorder.take()) == whole, f"after failing at allocation {allocations}"
    else:
        pytest.fail("take() never succeeded")
    assert allocations > 0


def test_the_out_of_memory_takes_run_in_a_process_of_their_own():
    """In a suite, threads of earlier tests still run and the test above skips: its takes run
    here in a fresh interpreter, where this one is the only thread."""
    if threading.active_count() == 1:
        pytest.skip("this process has no other thread: the test above ran here")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"{__file__}::test_a_take_that_runs_out_of_memory_leaves_every_column_as_it_was"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(TAKES)} passed" in done.stdout, done.stdout
