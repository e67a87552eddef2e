"""Interval snapshots: what one worker measured in one stats interval, mergeable across workers.

Counts add and histograms merge, so a run's aggregate and a multi-worker interval are both just
:func:`merge_all` over snapshots. Histograms are in microseconds (see :mod:`loadgen.base.hdr`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from loadgen.base import hdr
from loadgen.base.hdr_core import (  # noqa: F401 - the metric names are the stats' vocabulary
    ALL_METRICS,
    END_TO_END,
    END_TO_END_CATCH_UP,
    END_TO_END_FROM_INTENDED,
    END_TO_END_TAILING,
    END_TO_END_UNCORRECTED,
    METRICS,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    ROLE_METRICS,
    TRANSACTION_ABORT,
    TRANSACTION_COMMIT,
    TRANSACTION_METRICS,
)


@dataclass(frozen=True)
class IntervalStats:
    """One interval's counts and latency histograms.

    ``start_ms``/``end_ms`` are wall-clock epoch milliseconds. ``warmup`` intervals are kept in
    the result's totals but excluded from the aggregated latencies and per-period lists.
    ``negative_e2e`` counts deliveries whose receive time was before the send time (clock skew):
    they are counted here rather than silently dropped, and are not in the histogram. When the
    workers' clock offsets corrected the latencies, it counts what is negative after the
    correction, and ``negative_e2e_uncorrected`` what was negative before it.
    ``duplicates`` and ``out_of_order`` are what :mod:`loadgen.engine.accounting` found in the
    interval
    (duplicates within one worker; those across workers show only in the run's totals).
    """

    start_ms: int
    end_ms: int
    sent: int = 0
    send_errors: int = 0
    bytes_sent: int = 0
    received: int = 0
    bytes_received: int = 0
    negative_e2e: int = 0
    negative_e2e_uncorrected: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    received_catch_up: int = 0
    """Of ``received``, what catch-up subscriptions received (catch-up and mixed runs)."""
    cpu_ns: int = 0
    """CPU the run's processes used in the interval, every thread (:mod:`loadgen.base.cpu_use`)."""
    cpu_wait_ns: int = 0
    """How long their threads could run but waited for a CPU: the host's share in the interval."""
    cpu_slices: int = 0
    """How many times their threads were given a CPU (the waits' count)."""
    withdrawn: int = 0
    """Messages the producers took back: sent in a transaction aborted on purpose
    (``transactionAbortRatio``), neither acknowledged nor failed, so in neither ``sent`` nor
    ``send_errors``."""
    warmup: bool = False
    histograms: Mapping[str, hdr.Histogram] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return max(self.end_ms - self.start_ms, 1) / 1000.0

    def histogram(self, metric: str) -> hdr.Histogram:
        """The histogram for ``metric``; an empty one when nothing was recorded."""
        found = self.histograms.get(metric)
        return found if found is not None else hdr.histogram_for(metric)


def measured_intervals(intervals: Iterable[IntervalStats]) -> list[IntervalStats]:
    """The intervals that count in aggregates: all but the warm-up ones."""
    return [s for s in intervals if not s.warmup]


def recorded_metrics(intervals: Iterable[IntervalStats]) -> tuple[str, ...]:
    """OMB's :data:`METRICS`, ``endToEndUncorrected`` when the run's clocks were corrected, and
    the transaction metrics when its producers were transactional: the metrics of a result's
    ``histograms`` block and of its ``.hlog`` files."""
    items = list(intervals)
    corrected = any(END_TO_END_UNCORRECTED in s.histograms for s in items)
    transactional = any(TRANSACTION_COMMIT in s.histograms for s in items)
    return (
        *METRICS,
        *((END_TO_END_UNCORRECTED,) if corrected else ()),
        *(TRANSACTION_METRICS if transactional else ()),
    )


def running_backlogs(intervals: Iterable[IntervalStats], subscriptions: int) -> list[int]:
    """The backlog at the end of each interval (warm-up too), from running totals: what each
    subscription has yet to read of what was sent."""
    sent = received = 0
    backlogs = []
    for stats in intervals:
        sent += stats.sent
        received += stats.received
        backlogs.append(max(0, subscriptions * sent - received))
    return backlogs


def sent_per_second(intervals: Iterable[IntervalStats], *, withdrawn: bool = False) -> float:
    """Messages sent per second over ``intervals`` (their total over their seconds); 0 if none.
    With ``withdrawn``, the messages of transactions aborted on purpose count too: they were
    sent at the asked rate."""
    items = list(intervals)
    seconds = sum(s.seconds for s in items)
    sent = sum(s.sent + (s.withdrawn if withdrawn else 0) for s in items)
    return sent / seconds if seconds else 0.0


def merge_all(snapshots: Iterable[IntervalStats]) -> IntervalStats:
    """Merge snapshots (of several workers, or of a whole run) into one."""
    items = list(snapshots)
    if not items:
        raise ValueError("merge_all needs at least one snapshot")
    histograms = {}
    for metric in ALL_METRICS:
        if any(metric in s.histograms for s in items):
            present = (s.histograms[metric] for s in items if metric in s.histograms)
            histograms[metric] = hdr.merge(metric, present)
    return IntervalStats(
        start_ms=min(s.start_ms for s in items),
        end_ms=max(s.end_ms for s in items),
        sent=sum(s.sent for s in items),
        send_errors=sum(s.send_errors for s in items),
        bytes_sent=sum(s.bytes_sent for s in items),
        received=sum(s.received for s in items),
        bytes_received=sum(s.bytes_received for s in items),
        negative_e2e=sum(s.negative_e2e for s in items),
        negative_e2e_uncorrected=sum(s.negative_e2e_uncorrected for s in items),
        duplicates=sum(s.duplicates for s in items),
        out_of_order=sum(s.out_of_order for s in items),
        received_catch_up=sum(s.received_catch_up for s in items),
        cpu_ns=sum(s.cpu_ns for s in items),
        cpu_wait_ns=sum(s.cpu_wait_ns for s in items),
        cpu_slices=sum(s.cpu_slices for s in items),
        withdrawn=sum(s.withdrawn for s in items),
        warmup=all(s.warmup for s in items),
        histograms=histograms,
    )
