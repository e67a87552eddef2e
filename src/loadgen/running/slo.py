"""Service-level checks on a :class:`~loadgen.running.result.Result`, for tests.

``assert_slo(result, "e2e.p99<5ms", "rate>=0.99")`` takes the expressions of ``loadgen run
--slo`` (:mod:`loadgen.running.thresholds`). It raises an AssertionError that lists every
missed limit with its measured value and then the run's percentile table, so a failing test
says what happened without a debugger. Errors, missing, lost and duplicated messages fail
unless an expression allows them (:data:`ALWAYS_JUDGED`); so does a catch-up drain that did
not come. The verdicts ``rate.held`` and
``consumers.keptUp`` are judged when asked for.
"""

from __future__ import annotations

from loadgen.formats.run_verdicts import drain_failed
from loadgen.running import thresholds
from loadgen.running.result import Result

ALWAYS_JUDGED = ("errors<=0", "missing<=0", "lost<=0", "duplicates<=0")
"""Judged for every run unless an expression names the same figure (``"missing<=5"``): a
latency from a run that lost or duplicated messages is no pass. A figure the run could not
count (``lost is None``: its messages carried no ids) is left out, unless asked for."""


def assert_slo(result: Result, *expressions: str) -> None:
    """Fail with every missed limit and the percentile table; pass silently otherwise."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    asked = thresholds.parse_all(expressions, option="assert_slo")
    named = {threshold.name for threshold in asked}
    defaults = [
        threshold
        for threshold in thresholds.parse_all(ALWAYS_JUDGED, option="assert_slo")
        if threshold.name not in named and getattr(result, threshold.name) is not None
    ]
    checks = thresholds.judge((*defaults, *asked), thresholds.figures_of(result))
    missed = [check.describe() for check in checks if not check.passed]
    if result.incomplete:
        missed.append(f"the run did not complete: {result.stop_reason}")
    if drain_failed(result.document):
        missed.append(f"the catch-up drain did not come: {result.document['verdicts']['drain']}")
    if missed:
        raise AssertionError("SLO missed:\n  " + "\n  ".join(missed) + "\n" + result.table())
