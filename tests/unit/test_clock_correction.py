"""Per-message clock correction of end-to-end latencies (:mod:`loadgen.worker.skew`): the math,
and a worker's snapshot with and without a correction table."""

import time

import numpy as np

from drivers.memory import Driver
from loadgen import hdr
from loadgen.accounting import message_id_base
from loadgen.spec.driver_spec import DriverSpec
from loadgen.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    END_TO_END_UNCORRECTED,
    recorded_metrics,
)
from loadgen.worker.local import LocalWorker
from loadgen.worker.skew import ClockTable

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


def _worker_with_deliveries(table, producer_lead_ns=250 * MS):
    """A worker whose one consumer got three messages of producer 0, sent 5, 6 and 7 ms before
    they arrived by a clock ``producer_lead_ns`` ahead of this one, and one message of an
    unknown producer (3 ms, same clock)."""
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    [topic] = worker.create_topics(1, 1)
    worker.create_consumers([(topic, "sub")])
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


class Replay:
    """A consumer recorder whose next take is one already taken."""

    def __init__(self, sample):
        self.sample = sample

    def take(self):
        return self.sample


def test_corrected_and_uncorrected_differ_by_exactly_the_shift():
    # this worker 250 ms ahead of the coordinator, the producer's 220 ms: its stamps are 30 ms
    # behind this clock, so every latency of producer 0 reads 30 ms too high
    shift = 30 * MS
    table = ClockTable(250 * MS, [(0, 1, 220 * MS)])
    worker = _worker_with_deliveries(table, producer_lead_ns=-shift)
    sample = worker._consumer_recorders[0].take()
    worker._consumer_recorders[0] = Replay(sample)  # the snapshot takes what was read here
    raw = np.frombuffer(sample.deliveries, dtype=np.int64).reshape(-1, 4)[:, 0].copy()
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    # producer 0's three are shifted; the fourth delivery's producer is unknown: as measured
    corrected = np.concatenate([raw[:3] - shift, raw[3:]])
    assert hdr.encode(stats.histogram(END_TO_END)) == hdr.encode(
        hdr.record_ns(END_TO_END, corrected)
    )
    assert hdr.encode(stats.histogram(END_TO_END_UNCORRECTED)) == hdr.encode(
        hdr.record_ns(END_TO_END_UNCORRECTED, raw)
    )
    assert hdr.encode(stats.histogram(END_TO_END)) != hdr.encode(hdr.record_ns(END_TO_END, raw))
    assert sorted((corrected[:3] // MS).tolist()) == [5, 6, 7]


def test_without_a_table_nothing_is_corrected_and_no_uncorrected_metric_is_recorded():
    worker = _worker_with_deliveries(None)
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    assert END_TO_END_UNCORRECTED not in stats.histograms
    assert recorded_metrics([stats]) == recorded_metrics([])
    assert stats.negative_e2e == stats.negative_e2e_uncorrected == 3
