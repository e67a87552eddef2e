"""The result's ``transactions`` block: what transactional producers committed and aborted.

Counts cover the whole run, warm-up included, as the result's other totals do; latencies are
over the measured intervals, as the aggregated ones are. A transaction's commit (or abort)
latency is how long the producer's commit (abort) call took, one value per transaction; each
message's publish latency, from its send to its transaction's commit, is in ``publish``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loadgen.base import hdr
from loadgen.engine.stats import (
    TRANSACTION_ABORT,
    TRANSACTION_COMMIT,
    IntervalStats,
    measured_intervals,
    merge_all,
)
from loadgen.formats.catch_up import latency_ms


def transaction_fields(
    intervals: Sequence[IntervalStats], aborted_read: int | None
) -> dict[str, Any] | None:
    """The block, or ``None`` when no producer was transactional. ``aborted_read`` is the
    accounting's count of aborted messages consumers read (``None``: the run could not
    account)."""
    if not any(TRANSACTION_COMMIT in s.histograms for s in intervals):
        return None
    whole = merge_all(intervals)
    measured = measured_intervals(intervals)
    latencies = merge_all(measured) if measured else None

    def latency(metric: str) -> dict[str, float]:
        return latency_ms(latencies.histogram(metric) if latencies else hdr.histogram_for(metric))

    return {
        "committed": whole.histogram(TRANSACTION_COMMIT).total,
        "aborted": whole.histogram(TRANSACTION_ABORT).total,
        "messagesWithdrawn": whole.withdrawn,
        "abortedMessagesRead": aborted_read,
        "commitLatency": latency(TRANSACTION_COMMIT),
        "abortLatency": latency(TRANSACTION_ABORT),
    }
