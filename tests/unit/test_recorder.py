"""The recorders, both engines: what they record, that a take never splits a message, and that
both take the same arguments and fail the same way, storing a row whole or not at all."""

import dis
import itertools
import shutil
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from loadgen.base import hdr, hdr_core
from loadgen.driver_api import prefixed_deliveries
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_BYTES, PREFIX_MARK, pack_prefixed
from loadgen.engine import burst as bursts
from loadgen.engine import recorder as recorders
from loadgen.engine.accounting import PARTITION_LIMIT
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.slow_consumer import delayed
from loadgen_drivers.memory import Driver

PYTHON_READS_THE_C_CLOCKS = (
    time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    and time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"
)
"""setup.py's condition for building the C engine: Python reads the clocks it reads."""


def values_us(histogram) -> list[int]:
    """Every value a histogram counted, in µs (below 262 ms each counts index is its value)."""
    assert histogram.index.max(initial=0) < 2 * hdr.layout(histogram.metric).sub_bucket_half_count
    return np.repeat(histogram.index, histogram.counts).tolist()


def test_the_c_engine_is_built_where_a_c_compiler_is():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the pure-Python engine is the one")
    if not PYTHON_READS_THE_C_CLOCKS:
        pytest.skip("Python's perf_counter or time is not the C engine's clock here")
    assert recorders._hotpath is not None, "pip install did not build loadgen.engine._hotpath"


def test_the_c_engine_is_only_built_where_python_reads_its_clocks():
    if recorders._hotpath is None:
        pytest.skip("loadgen.engine._hotpath is not built")
    assert time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    assert time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"


@pytest.mark.skipif(recorders._hotpath is None, reason="loadgen.engine._hotpath is not built")
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
    after_us = (time.perf_counter_ns() - now) // 1000
    assert recorder.acked_count == 1
    sample = recorder.take()
    assert values_us(sample.publish_delay) == [2, 4_000]  # one per message sent
    [publish] = values_us(sample.publish)
    assert 1_000 <= publish <= after_us + 1_000
    [from_intended] = values_us(sample.publish_from_intended)
    assert 5_000 <= from_intended <= after_us + 5_000
    assert sample.acked_ids().tolist() == [7]
    assert sample.errors == 1
    assert recorder.take().errors == 0


def test_producer_recorder_measures_from_send_and_from_intended_time(producer_recorder):
    recorder = producer_recorder()
    now = time.perf_counter_ns()
    recorder.on_done(7, now - 5_000_000, now - 1_000_000, None, "client extra arg")
    recorder.on_done(8, now, now, RuntimeError("nack"))
    sample = recorder.take()
    [publish] = values_us(sample.publish)
    assert publish >= 1_000
    [from_intended] = values_us(sample.publish_from_intended)
    assert from_intended >= 5_000
    assert sample.acked_ids().tolist() == [7]  # the failed send is an error, not an acknowledged id
    assert sample.errors == 1
    assert recorder.take().errors == 0  # errors are reported once


def test_consumer_recorder_counts_bytes_once_per_take(consumer_recorder):
    recorder = consumer_recorder()
    now = time.time_ns()
    recorder.on_message(b"x" * 100, now - 2_000_000, 42, now - 5_000_000, 3)
    first = recorder.take()
    assert first.received_bytes == 100 and first.received == 1
    [e2e] = values_us(first.end_to_end)
    [from_intended] = values_us(first.from_intended)
    assert e2e >= 2_000 and from_intended >= 5_000
    assert list(first.identities) == [42, 3]
    assert first.uncorrected is None and first.negative == 0
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

    def write(writer):
        for i in range(per_writer):
            message_id = writer * per_writer + i
            recorder.on_message(b"p", 0, message_id, 0, message_id % 7)

    taken = taken_while_writing(recorder.take, write, writers)
    assert sum(sample.received for sample in taken) == per_writer * writers
    assert len([s for s in taken if s.received]) > 1  # the reader really swapped mid-stream
    for sample in taken:  # a delivery's counts and its id land in the same take
        assert sample.end_to_end.total == sample.from_intended.total == sample.received
    pairs = [list(s.identities) for s in taken]
    assert all(len(p) % 2 == 0 for p in pairs)  # no id split from its partition
    ids = [i for p in pairs for i in p[0::2]]
    assert sorted(ids) == list(range(per_writer * writers))
    partitions = [partition for p in pairs for partition in p[1::2]]
    assert all(p == i % 7 for i, p in zip(ids, partitions, strict=True))


def test_acks_from_several_threads_while_taking_lose_and_split_nothing(producer_recorder):
    recorder = producer_recorder()
    per_writer, writers = 100_000, 3

    def write(writer):
        for i in range(per_writer):
            message_id = writer * per_writer + i
            recorder.bind(message_id, -message_id, 0)(None)  # ack - intended names the id

    taken = taken_while_writing(recorder.take, write, writers)
    assert len([s for s in taken if s.acked_count]) > 1  # the reader really took mid-stream
    acked = [i for s in taken for i in s.acked_ids().tolist()]
    assert sorted(acked) == list(range(per_writer * writers))
    assert sum(s.publish_delay.total for s in taken) == per_writer * writers
    assert sum(s.publish.total for s in taken) == per_writer * writers
    if producer_recorder is recorders.CompiledProducerRecorder:
        # in C an ack's values land in the same take (in Python each append is whole, but a
        # take may fall between them: counts stay exact over takes)
        for sample in taken:
            assert sample.publish.total == sample.publish_from_intended.total == sample.acked_count


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
    assert sample.publish.total == sample.publish_from_intended.total == sample.acked_count
    return sample.acked_ids().tolist(), sample.errors


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
    assert sample.publish_delay.total == 1  # bound once, whatever the ack did


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
    # a message sent before its intended time, or acknowledged before it was sent
    pytest.param(lambda r, now: r.bind(0, now, now - 1), ValueError, 0, id="negative delay"),
    pytest.param(
        lambda r, now: r.on_done(0, now, now + 10**12, None), ValueError, 0, id="ack before send"
    ),
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
    # partition + 1 must fit in a stream key's seq bits (-1: the client cannot tell)
    pytest.param((b"x", NOW, 0, NOW, PARTITION_LIMIT), ValueError, id="partition too high"),
    pytest.param((b"x", NOW, 0, NOW, INT64_MAX), ValueError, id="partition int64 max"),
    pytest.param((b"x", NOW, 0, NOW, -2), ValueError, id="partition below -1"),
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
    recorder.on_message(b"good", now - 1_000_000, 2, now - 1_000_000, PARTITION_LIMIT - 1)
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
    assert recorded(produced) == ([0, 1, 2, 3, 4], 5) and produced.publish_delay.total == 5
    assert consumed.received == 5 and list(consumed.identities[0::2]) == [0, 1, 2, 3, 4]
    assert consumed.end_to_end.total == 5
    assert (producer.acked_count, consumer.received) == (0, 0)
    produced, consumed = producer.take(), consumer.take()
    assert recorded(produced) == ([], 0) and produced.publish_delay.total == 0
    assert consumed.end_to_end.total == 0
    assert (consumed.received, consumed.received_bytes) == (0, 0)


def returned_with_allocations_failing_after(call, allocations: int) -> bool:
    """Call ``call()`` with every allocation from the ``allocations``-th on failing (CPython's
    own fault injection, ``_testcapi.set_nomemory``); whether it returned."""
    testcapi = pytest.importorskip("_testcapi")
    if threading.active_count() > 1:
        pytest.skip("another thread could run, and fail to allocate, while allocations fail")
    testcapi.set_nomemory(allocations, 0)
    try:
        call()
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


def counted(pair: tuple[bytes, bytes]) -> int:
    """How many values a C core's (index, counts) pair holds."""
    return sum(memoryview(pair[1]).cast("q"))


def producer_columns(taken) -> list[int]:
    if isinstance(taken, tuple):  # the C core's own take(): three histograms, the acked runs
        return [*(counted(pair) for pair in taken[:3]), sum(memoryview(taken[3]).cast("q")[1::2])]
    histograms = (taken.publish, taken.publish_delay, taken.publish_from_intended)
    return [*(h.total for h in histograms), taken.acked_count]


def consumer_columns(taken) -> list[int]:
    if isinstance(taken, tuple):  # the C core's own: three histograms, identities, negatives
        return [counted(taken[0]), counted(taken[1]), len(taken[3]) // 16]
    return [taken.end_to_end.total, taken.from_intended.total, taken.received]


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
            partial(recorders._hotpath.ProducerCore, recorders.core_layout("publish")),
            filled_producer,
            producer_columns,
            id="c producer",
        ),
        pytest.param(
            partial(recorders._hotpath.ConsumerCore, recorders.core_layout("endToEnd")),
            filled_consumer,
            consumer_columns,
            id="c consumer",
        ),
    ]


@pytest.mark.parametrize(("kind", "filled", "columns"), TAKES)
def test_a_take_that_runs_out_of_memory_leaves_every_column_as_it_was(kind, filled, columns):
    """Allocation by allocation, until take() gets all it needs: each failing take leaves every
    column whole, as the next take shows."""
    whole = columns(filled(kind).take())
    assert all(whole) and whole
    for allocations in range(2000):
        recorder = filled(kind)
        if returned_with_allocations_failing_after(recorder.take, allocations):
            break
        assert columns(recorder.take()) == whole, f"after failing at allocation {allocations}"
    else:
        pytest.fail("take() never succeeded")
    assert allocations > 0


@pytest.mark.skipif(
    bursts._burst is None or recorders._hotpath is None, reason="the C engine is not built"
)
def test_a_burst_acknowledgement_that_runs_out_of_memory_records_no_part_of_its_message():
    """A call that is its own acknowledgement is recorded in one C call (delay, latencies, id):
    allocation by allocation, one that fails records none of them."""
    for allocations in range(500):
        core = recorders._hotpath.ProducerCore(recorders.core_layout("publish"))
        target = ({}.get, (None, None), 0, 1, -1)  # value, key; acknowledged as it returns
        burst = bursts._burst.Burst([target], [bytes(PREFIX_BYTES)], None, core.bind, [0], 0)
        run_one = partial(burst.run, 0, 1, 0, 1.0)
        sent = returned_with_allocations_failing_after(run_one, allocations)
        assert producer_columns(core.take()) == [int(sent)] * 4, f"failing at {allocations}"
        if sent:
            break
    else:
        pytest.fail("run() never succeeded")
    assert allocations > 0


OUT_OF_MEMORY_TESTS = {
    "test_a_take_that_runs_out_of_memory_leaves_every_column_as_it_was": len(TAKES),
    "test_a_burst_acknowledgement_that_runs_out_of_memory_records_no_part_of_its_message": int(
        bursts._burst is not None and recorders._hotpath is not None
    ),
}


def test_the_out_of_memory_takes_run_in_a_process_of_their_own():
    """In a suite, threads of earlier tests still run and the tests above skip: they run here
    in a fresh interpreter, where this one is the only thread."""
    if threading.active_count() == 1:
        pytest.skip("this process has no other thread: the tests above ran here")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         *(f"{__file__}::{name}" for name in OUT_OF_MEMORY_TESTS)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{sum(OUT_OF_MEMORY_TESTS.values())} passed" in done.stdout, done.stdout


def test_a_take_after_any_call_of_an_acknowledgement_splits_no_message():
    """CPython 3.11 may switch threads after any call: a take() there (here, from a tracer)
    finds an acknowledgement's latencies and id all in one interval, none in another. The C
    engine records an acknowledgement in one C call."""
    recorder = recorders.PythonProducerRecorder()
    code = recorder._acknowledge.__code__
    after_calls = {
        after.offset
        for call, after in itertools.pairwise(dis.get_instructions(code))
        if call.opname.startswith("CALL")
    }
    samples = []

    def take_after_calls(frame, event, arg):
        if frame.f_code is not code:
            return None
        frame.f_trace_opcodes = True
        if event == "opcode" and frame.f_lasti in after_calls:
            samples.append(recorder.take())
        return take_after_calls

    now = time.perf_counter_ns()
    acks = [recorder.bind(message_id, now, now) for message_id in range(3)]
    previous = sys.gettrace()
    sys.settrace(take_after_calls)
    try:
        for ack in acks:
            ack(None)
    finally:
        sys.settrace(previous)
    samples.append(recorder.take())
    assert len(samples) > len(acks), "no take ran between calls"
    for sample in samples:
        assert sample.publish.total == sample.publish_from_intended.total == sample.acked_count
    assert sorted(itertools.chain(*(s.acked_ids().tolist() for s in samples))) == [0, 1, 2]


# delays in ns around the layouts' bucket edges and past their highest trackable values
EDGES_NS = [0, 999, 1_000, 1_999, 262_143_000, 262_144_000, 524_287_999, 524_288_000]
SPREAD_NS = (2 ** np.random.default_rng(7).uniform(0, 46, 5_000)).astype(np.int64).tolist()
"""Spread evenly over the buckets: a power of 2 up to 2**46 ns (19.5 h), most below 60 s."""


@pytest.mark.parametrize("metric", ["publishDelay", "endToEnd"])
def test_both_engines_bin_each_value_as_hdr_record_ns_does(producer_recorder, metric):
    """The publish delay is the one latency a caller sets exactly (``sent - intended``); a
    producer recorder built on the end-to-end layout checks that layout's buckets too."""
    values = EDGES_NS + SPREAD_NS
    if producer_recorder is recorders.CompiledProducerRecorder:
        recorder = recorders._hotpath.ProducerCore(recorders.core_layout(metric))
        for message_id, delay in enumerate(values):
            recorder.bind(message_id, 0, delay)
        index, counts = (np.frombuffer(b, np.int64) for b in recorder.take()[1])
    else:
        recorder = producer_recorder()
        for message_id, delay in enumerate(values):
            recorder.bind(message_id, 0, delay)
        binned = hdr.record_ns(metric, np.frombuffer(recorder.publish_delay, np.int64))
        index, counts = binned.index, binned.counts
    expected = hdr.record_ns(metric, values)
    assert index.tolist() == expected.index.tolist()
    assert counts.tolist() == expected.counts.tolist()
    assert expected.total == len(values) and len(expected.index) > 1000


def stamped(payload: bytes, sent_ns: int, message_id: int, intended_ns: int) -> bytes:
    return pack_prefixed(PREFIX_MARK, sent_ns, message_id, intended_ns) + payload[PREFIX_BYTES:]


def test_a_prefixed_delivery_records_what_its_stamp_says(consumer_recorder):
    now = time.time_ns()
    recorder = consumer_recorder()
    payload = stamped(bytes(100), now - 2_000_000, 42, now - 5_000_000)
    assert recorder.on_prefixed(payload, 3) is True
    sample = recorder.take()
    assert (sample.received, sample.received_bytes, list(sample.identities)) == (1, 100, [42, 3])
    [e2e] = values_us(sample.end_to_end)
    [from_intended] = values_us(sample.from_intended)
    assert 2_000 <= e2e < 3_000 and 5_000 <= from_intended < 6_000


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(bytes(100), id="no mark"),
        pytest.param(PREFIX_MARK + bytes(10), id="shorter than the prefix"),
        pytest.param(bytearray(stamped(bytes(100), 1, 2, 3)), id="not bytes"),
        pytest.param(b"", id="empty"),
    ],
)
def test_a_delivery_without_the_prefix_is_left_to_the_driver(consumer_recorder, payload):
    recorder = consumer_recorder()
    assert recorder.on_prefixed(payload, 0) is False
    sample = recorder.take()
    assert (sample.received, sample.received_bytes, sample.end_to_end.total) == (0, 0, 0)


def test_acknowledgements_in_order_are_kept_as_runs_and_out_of_order_ones_exactly(
    producer_recorder,
):
    recorder = producer_recorder()
    order = [*range(10), 20, 21, 5, 22, *range(11, 14)]
    for message_id in order:
        recorder.bind(message_id, 0, 0)(None)
    sample = recorder.take()
    runs = recorders.pairs(sample.acked_runs).tolist()
    assert runs == [[0, 10], [20, 2], [5, 1], [22, 1], [11, 3]]
    assert sample.acked_ids().tolist() == order and sample.acked_count == len(order)


def test_a_batch_is_recorded_up_to_the_first_payload_without_the_prefix(consumer_recorder):
    now = time.time_ns()
    recorder = consumer_recorder()
    good = [
        stamped(bytes(64), now - 1_000_000, message_id, now - 2_000_000) for message_id in (1, 2)
    ]
    batch = [*good, b"unstamped", stamped(bytes(64), now - 1_000_000, 3, now - 2_000_000)]
    assert recorder.on_prefixed_many(batch, 0, 5) == 2
    assert recorder.on_prefixed_many(batch, 3, 5) == 4  # from where the driver carried on
    assert recorder.on_prefixed_many(batch, 4, 5) == 4  # nothing left
    sample = recorder.take()
    assert list(sample.identities) == [1, 5, 2, 5, 3, 5]
    assert sample.end_to_end.total == 3 and sample.received_bytes == 3 * 64


def test_a_driver_finds_the_recorder_behind_on_message_and_nothing_behind_a_wrapper(
    consumer_recorder,
):
    recorder = consumer_recorder()
    found = prefixed_deliveries(recorder.on_message)
    assert found is not None and found.on_prefixed_many([], 0, 0) == 0
    assert prefixed_deliveries(lambda *delivery: None) is None
    assert prefixed_deliveries(delayed(recorder.on_message, [0.0])) is None


@pytest.mark.parametrize(
    ("sent_ns", "intended_ns"),
    [pytest.param(INT64_MIN, 0, id="send time"), pytest.param(0, INT64_MIN, id="intended time")],
)
def test_a_stamp_whose_times_give_no_latency_is_counted_foreign_not_raised(
    consumer_recorder, sent_ns, intended_ns
):
    """A garbled or foreign payload that starts with the mark must not stop a consumer thread:
    it is skipped, counted, and not handed back to the driver to read again."""
    now = time.time_ns()
    recorder = consumer_recorder()
    garbled = stamped(bytes(64), sent_ns, 7, intended_ns)
    good = stamped(bytes(64), now - 1_000_000, 8, now - 2_000_000)
    assert recorder.on_prefixed(garbled, 0) is True
    assert recorder.on_prefixed_many([good, garbled, good], 0, 1) == 3
    sample = recorder.take()
    assert recorder.foreign == 2
    assert (sample.received, sample.received_bytes, list(sample.identities)) == (2, 128, [8, 1] * 2)
    assert sample.end_to_end.total == 2 and sample.negative == 0


@pytest.mark.skipif(recorders._hotpath is None, reason="loadgen.engine._hotpath is not built")
def test_a_core_is_made_whole_or_not_at_all():
    """Every part of a core is made with it, so no entry point meets a half-made one: without
    its layout there is none, and receipts made without arguments have their limit. In a
    process of its own: a half-made core crashed it."""
    script = """
from loadgen.engine import _hotpath
from loadgen.engine.recorder import core_layout
for kind in (_hotpath.ProducerCore, _hotpath.ConsumerCore):
    try:
        kind.__new__(kind)
    except TypeError:
        pass
    else:
        raise SystemExit(f"{kind.__name__} made without a layout")
producer = _hotpath.ProducerCore.__new__(_hotpath.ProducerCore, core_layout("publish"))
producer.bind(0, 0, 0)(None)
receipts = _hotpath.Receipts.__new__(_hotpath.Receipts)
consumer = _hotpath.ConsumerCore.__new__(_hotpath.ConsumerCore, core_layout("endToEnd"), receipts)
for seq in (5000, 5, 6):
    consumer.on_message(b"x", 0, (3 << 40) + seq, 0, 0)
print(len(producer.take()[3]), len(receipts.take()[0]) // 16)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == ["16", "2"]


@pytest.mark.skipif(recorders._hotpath is None, reason="loadgen.engine._hotpath is not built")
@pytest.mark.parametrize(
    ("field", "change"),
    [
        pytest.param(0, lambda highest: highest * 4, id="highest past counts_len"),
        pytest.param(3, lambda half_count: half_count * 2, id="half_count"),
        pytest.param(4, lambda mask: 0, id="mask 0"),
        pytest.param(5, lambda counts_len: counts_len - 1, id="counts_len"),
    ],
)
def test_a_layout_its_magnitudes_do_not_give_is_refused(field, change):
    """A layout whose counts do not reach its highest value would count past the last page."""
    layout = list(recorders.core_layout("endToEnd"))
    layout[field] = change(layout[field])
    for kind in (recorders._hotpath.ProducerCore, recorders._hotpath.ConsumerCore):
        with pytest.raises(ValueError, match="inconsistent"):
            kind(tuple(layout))


@pytest.mark.skipif(recorders._hotpath is None, reason="loadgen.engine._hotpath is not built")
def test_every_metrics_layout_is_accepted():
    for metric in hdr_core.HIGHEST_TRACKABLE_US:
        recorders._hotpath.ProducerCore(recorders.core_layout(metric))
