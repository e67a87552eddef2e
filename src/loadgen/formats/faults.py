"""The result's ``faults`` block and its verdict: each fault as it was made
(:mod:`loadgen.running.scenarios.faults`), with what it did to the run
(:mod:`loadgen.formats.fault_windows`).

Faults are framed one after another: a fault's ``before`` window starts where the previous one
ended, its ``after`` window ends where the next one starts. A fault that was never made (no
leader found, an action that failed) keeps its ``error`` and has no figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.engine.accounting import Accounting
from loadgen.engine.stats import IntervalStats, measured_intervals
from loadgen.formats.fault_windows import fault_figures, recovered


def _lost_per_interval(
    intervals: Sequence[IntervalStats], accounting: Accounting | None
) -> list[int] | None:
    """Per measured interval, the lost messages acknowledged in it (an acknowledgement mark
    at the interval's end, or inside it: the drain folds into the last one)."""
    if accounting is None or accounting.lost is None:
        return None
    return [
        sum(
            count for end_ms, count in accounting.lost_at.items() if s.start_ms < end_ms <= s.end_ms
        )
        for s in measured_intervals(intervals)
    ]


def fault_fields(
    records: Sequence[Mapping[str, Any]],
    intervals: Sequence[IntervalStats],
    asked_rate: float | None,
    accounting: Accounting | None,
) -> list[dict[str, Any]]:
    """Each fault record with its figures added."""
    lost = _lost_per_interval(intervals, accounting)
    made = [r for r in records if r.get("startedAt") is not None and r.get("endedAt") is not None]
    fields = []
    for record in records:
        if record not in made:
            fields.append(dict(record))
            continue
        index = made.index(record)
        since = made[index - 1]["endedAt"] if index > 0 else None
        until = made[index + 1]["startedAt"] if index + 1 < len(made) else None
        figures = fault_figures(
            intervals,
            record["startedAt"],
            record["endedAt"],
            asked_rate,
            lost_per_interval=lost,
            since_ms=since,
            until_ms=until,
        )
        fields.append({**record, **figures})
    return fields


def faults_verdict(faults: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``recovered``: every fault was made and the run recovered from each; ``null`` with a
    reason when one could not be judged."""
    failed = [f for f in faults if f.get("error")]
    if failed:
        return {"recovered": False, "reason": f"a fault was not made: {failed[0]['error']}"}
    answers = [recovered(f) for f in faults]
    if any(answer is False for answer in answers):
        reason = next(f["recoveryReason"] for f, a in zip(faults, answers, strict=True) if not a)
        return {"recovered": False, "reason": reason}
    if any(answer is None for answer in answers):
        reason = next(
            f["recoveryReason"] for f, a in zip(faults, answers, strict=True) if a is None
        )
        return {"recovered": None, "reason": reason}
    return {"recovered": True, "seconds": max(f["recoverySeconds"] for f in faults)}


def fault_counts(faults: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """The figures ``--slo`` judges (``fault.recovery<30s``, ``fault.unavailable<10s``,
    ``fault.lost==0``): the longest recovery (infinite when one never came) and outage, in µs
    as latencies are, and every fault's losses."""
    if not faults:
        return {"fault.recovery": None, "fault.unavailable": None, "fault.lost": None}
    recoveries = [f.get("recoverySeconds") for f in faults]
    outages = [f.get("unavailableSeconds") for f in faults]
    losses = [f.get("lost") for f in faults]
    return {
        "fault.recovery": max(math.inf if r is None else r for r in recoveries) * 1e6,
        "fault.unavailable": None if None in outages else max(outages) * 1e6,
        "fault.lost": None if None in losses else sum(losses),
    }
