"""What a fault did to a run (issue #56): figures before, during and after it, from the run's
interval snapshots.

Three windows of measured intervals frame a fault that started at ``started_ms`` and ended at
``ended_ms`` (for an action without a duration, such as a restart, when it finished):

* ``before``: intervals ending at or before the start (and starting at or after ``since_ms``,
  the previous fault's end, when there was one);
* ``during``: intervals overlapping ``[started_ms, ended_ms)``; an interval straddling either
  edge is here, and so is the one a fault without duration fell inside;
* ``after``: intervals starting at or after the end (and ending at or before ``until_ms``, the
  next fault's start, when there is one).

Each window gets the same figures, as :mod:`loadgen.formats.catch_up` gives each phase. The
fault's own figures (outage, recovery, losses) are over ``during`` and ``after``. Everything is
interval-grained: fault runs use 1 s intervals, so times are to the second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadgen.base.hdr_core import summaries
from loadgen.engine.stats import (
    END_TO_END,
    PUBLISH,
    IntervalStats,
    measured_intervals,
    merge_all,
    sent_per_second,
)
from loadgen.formats.catch_up import latency_ms
from loadgen.formats.run_verdicts import RATE_TOLERANCE

RECOVERY_LATENCY_FACTOR = 2
"""An interval is back to normal when its publish p99 is at most this many times the before
window's."""
RECOVERY_SLACK_US = 1000
"""... or at most this much above it, whichever is higher: below a millisecond, twice a broker's
p99 is noise (an in-process broker's is a few µs, or 0), not a fault's trace."""
RECOVERY_RATE_SHARE = 1 - RATE_TOLERANCE
"""... and its publish rate at least this share of the asked rate (or of the before window's
mean rate when no rate was asked): the tolerance the run's rate verdict allows."""
LATENCY_KEYS = ("50pct", "99pct", "Max")
"""The percentiles each window reports, from :func:`latency_ms`."""


def fault_figures(
    intervals: Sequence[IntervalStats],
    started_ms: int,
    ended_ms: int,
    asked_rate: float | None,
    *,
    lost_per_interval: Sequence[int] | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> dict[str, Any]:
    """The fault's figures: its three ``windows``, then what it did over ``during`` and ``after``.

    ``intervals`` are the run's, warm-up ones included (they are left out here);
    ``lost_per_interval`` has one count per *measured* interval: how many of the messages
    acknowledged in it were lost (``None`` when the run could not account).

    * ``unavailableSeconds``: the longest stretch of consecutive intervals, from the fault's
      start on, in which no publish was acknowledged (``sent == 0``), summed by their lengths.
      Interval-grained: only whole intervals with no acknowledgement count, so with 1 s
      intervals an outage of 2.3 s shows as 1 or 2 s.
    * ``recoverySeconds``: from ``ended_ms`` to the end of the first ``after`` interval whose
      publish p99 is within :data:`RECOVERY_LATENCY_FACTOR` times the before window's and whose
      publish rate is held (:data:`RECOVERY_RATE_SHARE`): the time by which the run was shown
      recovered. ``None`` when none was, with ``recoveryReason`` saying why.
    * ``duplicated``, ``outOfOrder``: totals over ``during`` and ``after``; ``lost`` also takes
      in the last ``before`` interval: what a broker loses when it fails is what it had
      acknowledged and not yet delivered, acknowledged just before the fault started.
    """
    if ended_ms < started_ms:
        raise ValueError(f"the fault ended ({ended_ms}) before it started ({started_ms})")
    measured = measured_intervals(intervals)
    if lost_per_interval is not None and len(lost_per_interval) != len(measured):
        raise ValueError(
            f"lost_per_interval has {len(lost_per_interval)} counts"
            f" for {len(measured)} measured intervals"
        )
    lost = list(lost_per_interval) if lost_per_interval is not None else [0] * len(measured)
    before: list[int] = []
    during: list[int] = []
    after: list[int] = []
    for n, stats in enumerate(measured):
        if stats.end_ms <= started_ms:
            if since_ms is None or stats.start_ms >= since_ms:
                before.append(n)
        elif stats.start_ms >= ended_ms:
            if until_ms is None or stats.end_ms <= until_ms:
                after.append(n)
        else:
            during.append(n)
    accounted = lost_per_interval is not None

    def window(indices: list[int]) -> dict[str, Any]:
        return _window([measured[n] for n in indices], [lost[n] for n in indices], accounted)

    fault = [measured[n] for n in during + after]
    recovery, reason = _recovery(
        [measured[n] for n in before], [measured[n] for n in after], ended_ms, asked_rate
    )
    return {
        "windows": {"before": window(before), "during": window(during), "after": window(after)},
        "unavailableSeconds": _longest_outage(fault),
        "recoverySeconds": recovery,
        "recoveryReason": reason,
        "lost": sum(lost[n] for n in before[-1:] + during + after) if accounted else None,
        "duplicated": sum(s.duplicates for s in fault),
        "outOfOrder": sum(s.out_of_order for s in fault),
    }


def recovered(figures: Mapping[str, Any]) -> bool | None:
    """``True`` when the run was shown recovered from the fault (``recoverySeconds`` is a
    number); ``False`` when intervals came after it and none was back to normal; ``None`` when
    it could not be judged: no before window to compare with, no publish acknowledged in it, or
    no interval after the fault (it was at the run's edge)."""
    if figures["recoverySeconds"] is not None:
        return True
    windows = figures["windows"]
    before = windows["before"]
    if not before["intervals"] or before["publishLatency"] is None:
        return None
    return False if windows["after"]["intervals"] else None


def _window(stats: Sequence[IntervalStats], lost: Sequence[int], accounted: bool) -> dict[str, Any]:
    """One window's figures; ``{"seconds": 0, "intervals": 0}`` when it has no interval.
    Its seconds are its intervals' lengths, so ``during`` can be longer than the fault."""
    if not stats:
        return {"seconds": 0.0, "intervals": 0}
    merged = merge_all(stats)
    seconds = sum(s.seconds for s in stats)
    return {
        "seconds": seconds,
        "intervals": len(stats),
        "publishRate": merged.sent / seconds,
        "consumeRate": merged.received / seconds,
        "errors": merged.send_errors,
        "publishLatency": _latency(merged, PUBLISH),
        "endToEndLatency": _latency(merged, END_TO_END),
        "lost": sum(lost) if accounted else None,
        "duplicated": merged.duplicates,
        "outOfOrder": merged.out_of_order,
    }


def _latency(merged: IntervalStats, metric: str) -> dict[str, float] | None:
    """{50pct, 99pct, Max} in ms (Java-equal); ``None`` when nothing was recorded, as in an
    outage, rather than zeros that read as fast."""
    histogram = merged.histogram(metric)
    if not histogram.total:
        return None
    figures = latency_ms(histogram)
    return {key: figures[key] for key in LATENCY_KEYS}


def _longest_outage(stats: Sequence[IntervalStats]) -> float:
    longest = current = 0.0
    for interval in stats:
        current = current + interval.seconds if interval.sent == 0 else 0.0
        longest = max(longest, current)
    return longest


def _recovery(
    before: Sequence[IntervalStats],
    after: Sequence[IntervalStats],
    ended_ms: int,
    asked_rate: float | None,
) -> tuple[float | None, str | None]:
    """(``recoverySeconds``, ``recoveryReason``). The rate counts messages withdrawn on purpose
    (aborted transactions), as the run's rate verdict does: they were sent at the asked rate."""
    if not before:
        return None, "no measured interval before the fault"
    baseline = summaries([merge_all(before).histogram(PUBLISH)])[0]
    if not baseline.count:
        return None, "no publish was acknowledged before the fault"
    if not after:
        return None, "no interval after the fault"
    ceiling_us = max(RECOVERY_LATENCY_FACTOR * baseline.p99, baseline.p99 + RECOVERY_SLACK_US)
    if asked_rate is not None:
        target, target_text = asked_rate, f"the asked {_number(asked_rate)} msg/s"
    else:
        target = sent_per_second(before, withdrawn=True)
        target_text = f"the before window's {_number(target)} msg/s"
    fast = held = acknowledged = False
    for stats, latency in zip(after, summaries([s.histogram(PUBLISH) for s in after]), strict=True):
        is_fast = latency.count > 0 and latency.p99 <= ceiling_us
        is_held = (stats.sent + stats.withdrawn) / stats.seconds >= RECOVERY_RATE_SHARE * target
        if is_fast and is_held:
            return (stats.end_ms - ended_ms) / 1000, None
        fast, held = fast or is_fast, held or is_held
        acknowledged = acknowledged or latency.count > 0
    p99_text = (
        f"{RECOVERY_LATENCY_FACTOR}x (or 1 ms above) the before window's"
        f" {_number(baseline.p99 / 1000)} ms"
    )
    share = f"{_number(RECOVERY_RATE_SHARE * 100)}%"
    if not acknowledged:
        return None, "no publish was acknowledged after the fault"
    if not fast and not held:
        return None, (
            f"publish p99 stayed above {p99_text} and the publish rate below {share} of"
            f" {target_text}"
        )
    if not fast:
        return None, f"publish p99 stayed above {p99_text}"
    if not held:
        return None, f"publish rate stayed below {share} of {target_text}"
    return None, (
        f"no interval had both publish p99 within {p99_text} and the publish rate at {share} of"
        f" {target_text}"
    )


def _number(value: float) -> str:
    """At most two decimals, no trailing zeros: 4.2, 1000, 0.25."""
    return f"{value:.2f}".rstrip("0").rstrip(".")
