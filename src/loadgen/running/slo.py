"""Service-level checks: ``--slo`` on a saved run, :func:`assert_slo` on a
:class:`~loadgen.running.result.Result`. Both take the expressions of
:mod:`loadgen.running.thresholds`.

``--slo``'s verdict is judged on the measured phase and added to the result document
(``slo: {passed, checks: [{expr, measured, unit, passed}]}``) before the HTML report is drawn
from the file, so the report shows it too. Only a complete run is judged: a run cut short
already exits non-zero.

``assert_slo(result, "e2e.p99<5ms", "rate>=0.99")``, for tests, raises an AssertionError that
lists every missed limit with its measured value and then the run's percentile table, so a
failing test says what happened without a debugger. Errors, missing, lost and duplicated
messages, and aborted messages read, fail unless an expression allows them
(:data:`ALWAYS_JUDGED`); so does a catch-up drain that did not come. The verdicts
``rate.held`` and ``consumers.keptUp`` are judged when asked for.
"""

from __future__ import annotations

import logging

from loadgen.base.files import write_json_atomic
from loadgen.engine.outcome import SavedRun
from loadgen.formats.run_verdicts import drain_failed
from loadgen.running import thresholds
from loadgen.running.result import Result, build_result
from loadgen.running.thresholds import Check, Threshold
from loadgen.spec import Workload

log = logging.getLogger("loadgen.results")

ALWAYS_JUDGED = ("errors<=0", "missing<=0", "lost<=0", "duplicates<=0", "abortedRead<=0")
"""Judged for every run unless an expression names the same figure (``"missing<=5"``): a
latency from a run that lost or duplicated messages is no pass. A figure the run could not
count (``lost is None``: its messages carried no ids) is left out, unless asked for."""
REMOVED_KEYWORDS = {
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
"""The keywords :func:`assert_slo` took before it took expressions, and the expression each one
was (an inclusive bound), so the error names the call to write instead."""


def judge_saved_run(
    saved: SavedRun, workload: Workload, limits: tuple[Threshold, ...]
) -> list[Check]:
    """Judge ``saved``'s run, record the verdict in its result file, return the checks."""
    document = saved.result
    result = build_result(
        document["workload"],
        document["driver"],
        workload.subscriptions_per_topic,
        saved.outcome.intervals,
        document,
        saved.outcome.phase_seconds,
    )
    checks = thresholds.judge(limits, thresholds.figures_of(result))
    document["slo"] = thresholds.verdict_json(checks)
    if saved.path is None:  # no directory took the result: it was printed without a verdict
        return checks
    try:
        write_json_atomic(saved.path, document)
    except OSError as error:  # the verdict is shown all the same; the result stays as written
        log.warning("the --slo verdict could not be added to %s: %s", saved.path, error)
    return checks


def format_checks(checks: list[Check]) -> str:
    """One line per threshold, its outcome and the measured value."""
    return "\n".join(
        f"slo: {'pass' if check.passed else 'FAIL'} {check.describe()}" for check in checks
    )


def assert_slo(result: Result, *expressions: str, **keywords: float) -> None:
    """Fail with every missed limit and the percentile table; pass silently otherwise.

    ``keywords`` are the form this took before expressions (``e2e_p99_ms=5``): they raise a
    TypeError that names the call to write instead (``assert_slo(result, "e2e.p99<=5ms")``)."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    if keywords:
        raise TypeError(_instead_of(keywords, expressions))
    asked = thresholds.parse_all(expressions, option="assert_slo")
    named = {threshold.name for threshold in asked}
    figures = thresholds.figures_of(result)
    defaults = [
        threshold
        for threshold in thresholds.parse_all(ALWAYS_JUDGED, option="assert_slo")
        if threshold.name not in named and figures.counts.get(threshold.name) is not None
    ]
    checks = thresholds.judge((*defaults, *asked), figures)
    missed = [check.describe() for check in checks if not check.passed]
    if result.incomplete:
        missed.append(f"the run did not complete: {result.stop_reason}")
    if drain_failed(result.document):
        missed.append(f"the catch-up drain did not come: {result.document['verdicts']['drain']}")
    if missed:
        raise AssertionError("SLO missed:\n  " + "\n  ".join(missed) + "\n" + result.table())


def _instead_of(keywords: dict[str, float], expressions: tuple[str, ...]) -> str:
    """What to write instead of keyword arguments: the same call with expressions."""
    unknown = sorted(set(keywords) - set(REMOVED_KEYWORDS))
    if unknown:
        return (
            f"assert_slo() got an unexpected keyword argument {unknown[0]!r}: it takes threshold "
            "expressions in the language of loadgen run --slo, e.g. "
            'assert_slo(result, "e2e.p99<20ms", "rate>=0.99")'
        )
    written = [REMOVED_KEYWORDS[name].format(_number(value)) for name, value in keywords.items()]
    call = ", ".join(["result", *(f'"{text}"' for text in (*written, *expressions))])
    return (
        f"assert_slo() takes threshold expressions, not keywords "
        f"({', '.join(f'{name}=' for name in keywords)}): write assert_slo({call})"
    )


def _number(value: float) -> str:
    """``60000`` for 60000 or 60000.0, ``2.5`` for 2.5: the number as a user writes it."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
