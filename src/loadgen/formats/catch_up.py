"""The result's ``catchUp`` block: the backlog phases of a catch-up or mixed run.

The contract names ``backlogMessages``, ``backlogBytes``, ``drainSeconds`` and ``drainRate``;
the rest is added beside them. ``phases`` gives build, drain and steady state the same figures,
each from the intervals inside it (phases end on interval boundaries), so the question "does a
catch-up read hurt tailing latency?" is answered by comparing ``endToEndTailing`` across them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loadgen.base import hdr
from loadgen.engine.outcome import CatchUpOutcome
from loadgen.engine.stats import (
    END_TO_END_CATCH_UP,
    END_TO_END_TAILING,
    PUBLISH,
    ROLE_METRICS,
    IntervalStats,
    measured_intervals,
    merge_all,
)


def latency_ms(histogram: hdr.Histogram) -> dict[str, float]:
    """p50/p99/p99.9/max in ms (Java-equal percentiles), the run summary's shape."""
    summary = hdr.summary(histogram)
    return {
        "50pct": summary.p50 / 1000,
        "99pct": summary.p99 / 1000,
        "999pct": summary.p999 / 1000,
        "Max": summary.max / 1000,
    }


def _phase(
    intervals: Sequence[IntervalStats], start_ms: int, end_ms: int, mixed: bool
) -> dict[str, Any]:
    inside = [s for s in intervals if s.start_ms >= start_ms and s.end_ms <= end_ms]
    seconds = (end_ms - start_ms) / 1000
    if not inside or seconds <= 0:
        return {"seconds": max(seconds, 0.0), "intervals": 0}
    merged = merge_all(inside)
    figures = {
        "seconds": seconds,
        "intervals": len(inside),
        "publishRate": merged.sent / seconds,
        "catchUpReadRate": merged.received_catch_up / seconds,
        "publishLatency": latency_ms(merged.histogram(PUBLISH)),
        "endToEndCatchUp": latency_ms(merged.histogram(END_TO_END_CATCH_UP)),
    }
    if mixed:
        tailing = merged.received - merged.received_catch_up
        figures["tailingReadRate"] = tailing / seconds
        figures["endToEndTailing"] = latency_ms(merged.histogram(END_TO_END_TAILING))
    return figures


def catch_up_fields(
    outcome: CatchUpOutcome, intervals: Sequence[IntervalStats], tailing_per_topic: int
) -> dict[str, Any]:
    """The ``catchUp`` block; phases a run cut short never ended are ``null``."""
    plan = outcome.plan
    measured = measured_intervals(intervals)
    last_ms = measured[-1].end_ms if measured else outcome.build_started_ms
    built = outcome.build_ended_ms > 0
    drain_over = outcome.drain_ended_ms > 0
    mixed = tailing_per_topic > 0
    drain = None
    if drain_over:
        drain = _phase(measured, outcome.build_ended_ms, outcome.drain_ended_ms, mixed)
    return {
        "backlogTargetBytes": plan.target_bytes,
        "backlogTargetMessages": plan.target_messages,
        "catchUpSubscriptionsPerTopic": plan.catch_up_subscriptions,
        "tailingSubscriptionsPerTopic": tailing_per_topic,
        "targetReached": outcome.target_reached,
        "backlogMessages": outcome.backlog_messages if built else None,
        "backlogBytes": outcome.backlog_messages * plan.message_size if built else None,
        "buildSeconds": outcome.build_seconds if built else None,
        "drainedBelowMessages": plan.drained_below,
        "drained": outcome.drained,
        "drainSeconds": outcome.drain_seconds if outcome.drained else None,
        "drainRate": drain["catchUpReadRate"] if drain and "catchUpReadRate" in drain else None,
        "phases": {
            "build": _phase(measured, outcome.build_started_ms, outcome.build_ended_ms, mixed)
            if built
            else None,
            "drain": drain,
            "steady": _phase(measured, outcome.drain_ended_ms, last_ms, mixed)
            if drain_over
            else None,
        },
    }


def role_histograms(intervals: Sequence[IntervalStats]) -> dict[str, dict[str, Any]]:
    """The per-role end-to-end histograms, in the ``histograms`` block's shape."""
    measured = measured_intervals(intervals)
    if not measured:
        return {}
    aggregate = merge_all(measured)
    return {
        metric: {
            "aggregated": hdr.encode(aggregate.histogram(metric)),
            "periods": [hdr.encode(s.histogram(metric)) for s in measured],
        }
        for metric in ROLE_METRICS
    }
