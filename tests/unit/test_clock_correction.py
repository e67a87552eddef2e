"""Per-message clock correction of end-to-end latencies (:mod:`loadgen.engine.skew`): the math,
and a worker's snapshot with and without a correction table."""

import time

import numpy as np

from loadgen.base import hdr
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.accounting import message_id_base
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.skew import ClockTable
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    END_TO_END_UNCORRECTED,
    recorded_metrics,
)
from loadgen_drivers.memory import Driver

MS = 1_000_000
# producers 0-1 run on a worker 250 ms ahead of the coordinator, producer 2 on one 40 ms behind;
# this (consumer's) worker is 10 ms ahead
TABLE = ClockTable(10 * MS, [(0, 2, 250 * MS), (2, 1, -40 * MS)])


def test_each_id_is_shifted_by_its_producers_worker():
    ids = np.array(
        [
            message_id_base(0) + 5,
            message_id_base(1),
            message_id_base(2) + 99,
            message_id_base(3),  # a producer the table does not know
            -1,  # no message id
        ],
        dtype=np.int64,
    )
    assert TABLE.shifts(ids).tolist() == [-240 * MS, -240 * MS, 50 * MS, 0, 0]


def test_an_empty_table_shifts_nothing():
    ids = np.array([message_id_base(0), -1], dtype=np.int64)
    assert ClockTable(7, []).shifts(ids).tolist() == [0, 0]


def _worker_with_deliveries(table, producer_lead_ns=250 * MS, recorder_kind=None):
    """A worker whose one consumer got three messages of producer 0, sent 5, 6 and 7 ms before
    they arrived by a clock ``producer_lead_ns`` ahead of this one, and one message of an
    unknown producer (3 ms, same clock); recorded by a ``recorder_kind`` if given."""
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    [topic] = worker.create_topics(1, 1)
    worker.create_consumers([(topic, "sub")])
    if recorder_kind is not None:
        worker._consumer_recorders[0] = recorder_kind()
    if table is not None:
        worker.correct_clocks(table)
    recorder = worker._consumer_recorders[0]  # the callback the driver would call
    now = time.time_ns()
    for seq, latency in enumerate((5 * MS, 6 * MS, 7 * MS)):
        sent = now - latency + producer_lead_ns
        recorder.on_message(b"x", sent, message_id_base(0) + seq, sent - MS, 0)
    recorder.on_message(b"x", now - 3 * MS, message_id_base(9), now - 4 * MS, 0)
    return worker


def test_a_snapshot_corrects_known_producers_and_keeps_the_uncorrected_latencies():
    worker = _worker_with_deliveries(ClockTable(0, [(0, 1, 250 * MS)]))
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    corrected = stats.histogram(END_TO_END)
    assert hdr.value_at_percentile(corrected, 0) // 1000 == 3  # the unknown producer's 3 ms
    assert corrected.total == 4 and stats.negative_e2e == 0
    # uncorrected, producer 0's messages arrived 245-243 ms *before* they were sent
    assert stats.negative_e2e_uncorrected == 3
    assert stats.histogram(END_TO_END_UNCORRECTED).total == 1  # only the unknown one is >= 0
    corrected_p100 = hdr.value_at_percentile(corrected, 100)
    assert 7 * 1000 <= corrected_p100 < 8 * 1000  # 7 ms, within the bucket width
    from_intended = stats.histogram(END_TO_END_FROM_INTENDED)
    assert from_intended.total == 4
    assert 8 * 1000 <= hdr.value_at_percentile(from_intended, 100) < 9 * 1000  # 7 ms + 1 ms
    assert END_TO_END_UNCORRECTED in recorded_metrics([stats])


def _values_us(histogram) -> list[int]:
    """Every value counted, in µs: below 262 ms each counts index is its own value."""
    assert histogram.index.max(initial=0) < 2 * hdr.layout(histogram.metric).sub_bucket_half_count
    return np.repeat(histogram.index, histogram.counts).tolist()


def test_corrected_and_uncorrected_differ_by_exactly_the_shift(consumer_recorder):
    # this worker 250 ms ahead of the coordinator, the producer's 220 ms: its stamps are 30 ms
    # behind this clock, so every latency of producer 0 reads 30 ms too high
    shift_us = 30_000
    table = ClockTable(250 * MS, [(0, 1, 220 * MS)])
    worker = _worker_with_deliveries(table, -shift_us * 1000, consumer_recorder)
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    raw = _values_us(stats.histogram(END_TO_END_UNCORRECTED))
    # producer 0's three are shifted; the fourth delivery's producer is unknown: as measured
    expected = sorted(v - shift_us if v >= shift_us else v for v in raw)
    assert _values_us(stats.histogram(END_TO_END)) == expected
    assert [v // 1000 for v in expected] == [3, 5, 6, 7]
    assert len(raw) == 4 and sorted(v // 1000 for v in raw) == [3, 35, 36, 37]


def test_without_a_table_nothing_is_corrected_and_no_uncorrected_metric_is_recorded():
    worker = _worker_with_deliveries(None)
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    assert END_TO_END_UNCORRECTED not in stats.histograms
    assert recorded_metrics([stats]) == recorded_metrics([])
    assert stats.negative_e2e == stats.negative_e2e_uncorrected == 3
