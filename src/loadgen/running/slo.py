"""Service-level checks on a :class:`~loadgen.running.result.Result`, for tests.

``assert_slo(result, "e2e.p99<5ms", "rate>=0.99")`` takes the expressions of ``loadgen run
--slo`` (:mod:`loadgen.running.thresholds`); the older keywords (``e2e_p99_ms=5, min_rate=9_900``)
become the same expressions. It raises an AssertionError that lists every missed limit with
its measured value and then the run's percentile table, so a failing test says what happened
without a debugger. Errors, missing, lost and duplicated messages fail by default: a latency
from a lossy run is no pass (a run that could not account, ``lost is None``, is judged on
missing only); so does a catch-up drain that did not come. The verdicts ``rate.held`` and
``consumers.keptUp`` are judged when asked for.
"""

from __future__ import annotations

from loadgen.formats.run_verdicts import drain_failed
from loadgen.running import thresholds
from loadgen.running.result import Result

KEYWORD_EXPRESSIONS = {
    "e2e_p50_ms": "e2e.p50<={}ms",
    "e2e_p99_ms": "e2e.p99<={}ms",
    "e2e_p999_ms": "e2e.p99.9<={}ms",
    "e2e_max_ms": "e2e.max<={}ms",
    "publish_p50_ms": "publish.p50<={}ms",
    "publish_p99_ms": "publish.p99<={}ms",
    "publish_p999_ms": "publish.p99.9<={}ms",
    "publish_from_intended_p99_ms": "publishFromIntended.p99<={}ms",
    "e2e_from_intended_p99_ms": "e2eFromIntended.p99<={}ms",
    "min_rate": "publishRate>={}",
    "max_errors": "errors<={}",
    "max_missing": "missing<={}",
    "max_lost": "lost<={}",
    "max_duplicates": "duplicates<={}",
}
"""Each keyword of :func:`assert_slo` and the expression it stands for."""


def assert_slo(
    result: Result,
    *expressions: str,
    e2e_p50_ms: float | None = None,
    e2e_p99_ms: float | None = None,
    e2e_p999_ms: float | None = None,
    e2e_max_ms: float | None = None,
    publish_p50_ms: float | None = None,
    publish_p99_ms: float | None = None,
    publish_p999_ms: float | None = None,
    publish_from_intended_p99_ms: float | None = None,
    e2e_from_intended_p99_ms: float | None = None,
    min_rate: float | None = None,
    max_errors: int = 0,
    max_missing: int = 0,
    max_lost: int = 0,
    max_duplicates: int = 0,
) -> None:
    """Fail with every missed limit and the percentile table; pass silently otherwise."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    limits = dict(locals())
    # a run whose messages carried no ids cannot count loss or duplicates: those are not judged
    if result.lost is None:
        limits["max_lost"] = None
    if result.duplicates is None:
        limits["max_duplicates"] = None
    texts = [
        pattern.format(repr(float(limits[keyword])))
        for keyword, pattern in KEYWORD_EXPRESSIONS.items()
        if limits[keyword] is not None
    ]
    checks = thresholds.judge(
        thresholds.parse_all([*texts, *expressions], option="assert_slo"),
        thresholds.figures_of(result),
    )
    missed = [check.describe() for check in checks if not check.passed]
    if result.incomplete:
        missed.append(f"the run did not complete: {result.stop_reason}")
    if drain_failed(result.document):
        missed.append(f"the catch-up drain did not come: {result.document['verdicts']['drain']}")
    if missed:
        raise AssertionError("SLO missed:\n  " + "\n  ".join(missed) + "\n" + result.table())
