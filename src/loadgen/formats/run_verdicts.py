"""The result's ``verdicts`` block: did the producers hold the asked rate, did the consumers keep
up, did a catch-up drain come — so an unattended run says what went wrong, not just numbers.

Each verdict is ``true``, ``false``, or ``null`` with a ``reason`` when the run cannot answer it
(no fixed rate asked, no consumers, too few intervals). ``passed`` is false when any answered
verdict is false. A run with faults adds ``faults.recovered``. A drain that did not come also
exits 1; the others are judged by ``--slo`` (``rate.held``, ``consumers.keptUp``,
``faults.recovered``, ``backlog.growth<N``), as a user's SLO decides what matters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import IntervalStats, running_backlogs, sent_per_second

ANSWERS = (
    ("rate", "held"),
    ("consumers", "keptUp"),
    ("drain", "completed"),
    ("faults", "recovered"),
)
"""Each verdict's block in ``verdicts`` and the key that answers it, in the order every table,
``--slo`` and the console give them."""

RATE_TOLERANCE = 0.01
"""Producers pace on an absolute schedule: one that keeps up sends the asked count to within
a message per producer, so more than 1 % short means the client or the broker held them back."""
BACKLOG_ALLOWANCE_S = 0.1
"""A backlog that grew by what a tenth of a second of traffic holds added that much latency
to every later message: consumers that do that over the measured phase are falling behind."""
MIN_BACKLOG_ALLOWANCE = 100
"""Messages: below this, growth is a batch or a fetch in flight, not a trend (low rates)."""


def asked_rate(workload: Mapping[str, Any]) -> float | None:
    """The fixed producerRate a run was asked for; ``None`` for rate discovery or a profile."""
    rate = workload.get("producerRate") or 0
    return float(rate) if rate > 0 and not workload.get("producerRateProfile") else None


def _not_judged(key: str, reason: str) -> dict[str, Any]:
    return {key: None, "reason": reason}


def rate_verdict(
    asked: float | None, measured: Sequence[IntervalStats], producers: int
) -> dict[str, Any]:
    """``held``: the measured phase's publish rate within the tolerance of the asked one."""
    if producers == 0:
        return _not_judged("held", "no producers")
    if asked is None:
        return _not_judged("held", "no fixed producerRate (rate discovery or a profile)")
    seconds = sum(stats.seconds for stats in measured)
    if seconds <= 0:
        return _not_judged("held", "nothing was measured")
    rate = sent_per_second(measured, withdrawn=True)
    tolerance = max(RATE_TOLERANCE, (producers + 1) / (asked * seconds))
    return {
        "held": rate >= asked * (1 - tolerance),
        "askedRate": asked,
        "publishRate": rate,
        "ratio": rate / asked,
        "tolerance": tolerance,
    }


def _slope(points: Sequence[tuple[float, int]]) -> float:
    """Least-squares slope of backlog over seconds: the trend, robust to one noisy sample."""
    mean_t = sum(t for t, _ in points) / len(points)
    mean_b = sum(b for _, b in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return 0.0
    return sum((t - mean_t) * (b - mean_b) for t, b in points) / spread


def backlog_points(
    outcome: RunOutcome, subscriptions: int, from_ms: int
) -> list[tuple[float, int]]:
    """(seconds, backlog) at the end of each interval of the steady phase (from ``from_ms``),
    led by the backlog when it began if an interval ended before it (warm-up, a drain). The
    last interval folds in the drain after the producers stopped: its point is the backlog
    when they stopped."""
    intervals = outcome.intervals
    points: list[tuple[float, int]] = []
    for stats, backlog in zip(intervals, running_backlogs(intervals, subscriptions), strict=True):
        if stats.warmup or stats.end_ms <= from_ms:
            points = [(stats.end_ms / 1000, backlog)]
        else:
            points.append((stats.end_ms / 1000, backlog))
    if points and outcome.backlog_at_stop is not None and not intervals[-1].warmup:
        points[-1] = (points[-1][0], outcome.backlog_at_stop)
    return points


def consumers_verdict(
    outcome: RunOutcome, subscriptions: int, producers: int, delivered_rate: float
) -> dict[str, Any]:
    """``keptUp``: the backlog did not grow over the steady phase by more than the allowance,
    judged on both its growth end to end and its least-squares trend."""
    if subscriptions == 0 or producers == 0:
        return _not_judged("keptUp", "no consumers" if subscriptions == 0 else "no producers")
    catch_up = outcome.catch_up
    if catch_up is not None and not catch_up.drained:
        return {"keptUp": False, "reason": "the catch-up drain did not come"}
    from_ms = catch_up.drain_ended_ms if catch_up is not None else 0
    points = backlog_points(outcome, subscriptions, from_ms)
    if len(points) < 2:
        return _not_judged("keptUp", "too few intervals for a trend (a warm-up or two intervals)")
    seconds = points[-1][0] - points[0][0]
    growth = points[-1][1] - points[0][1]
    trend = _slope(points)
    allowance = max(MIN_BACKLOG_ALLOWANCE, BACKLOG_ALLOWANCE_S * delivered_rate)
    return {
        "keptUp": min(growth, trend * seconds) <= allowance,
        "backlogAtStart": points[0][1],
        "backlogAtEnd": points[-1][1],
        "growth": growth,
        "trend": trend,
        "allowance": allowance,
        "seconds": seconds,
    }


def verdict_fields(
    outcome: RunOutcome,
    measured: Sequence[IntervalStats],
    workload: Mapping[str, Any],
    producers: int,
    subscriptions: int,
    faults: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``verdicts`` block of ``outcome``'s result; ``workload`` is the run's echo of it,
    ``faults`` the faults' verdict (:func:`loadgen.formats.faults.faults_verdict`) when the run
    had any."""
    delivered_rate = sent_per_second(measured) * subscriptions
    verdicts: dict[str, Any] = {
        "rate": rate_verdict(asked_rate(workload), measured, producers),
        "consumers": consumers_verdict(outcome, subscriptions, producers, delivered_rate),
    }
    catch_up = outcome.catch_up
    if catch_up is not None and catch_up.drain is not None:
        verdicts["drain"] = catch_up.drain.to_json()
    if faults is not None:
        verdicts["faults"] = faults
    answers = [verdicts.get(block, {}).get(key) for block, key in ANSWERS]
    return {"passed": all(answer is not False for answer in answers)} | verdicts


def drain_failed(result: Mapping[str, Any]) -> bool:
    """A catch-up drain that did not come: the run exits 1."""
    drain = result.get("verdicts", {}).get("drain")
    return drain is not None and not drain["completed"]
