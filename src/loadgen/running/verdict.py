"""A run's ``--slo`` verdict: judged on its measured phase, added to its result file, shown.

The verdict is an addition to the TestResult JSON (``slo: {passed, checks: [{expr, measured,
unit, passed}]}``), written before the HTML report is drawn from the file, so the report shows
it too. Only a complete run is judged: a run cut short already exits non-zero.
"""

from __future__ import annotations

import logging

from loadgen.base.files import write_json_atomic
from loadgen.engine.outcome import RunReport
from loadgen.running.result import build_result
from loadgen.running.thresholds import Check, Threshold, figures_of, judge, verdict_json
from loadgen.spec import Workload

log = logging.getLogger("loadgen.results")


def judge_report(
    report: RunReport, workload: Workload, thresholds: tuple[Threshold, ...]
) -> list[Check]:
    """Judge ``report``'s run, record the verdict in its result file, return the checks."""
    document = report.result
    result = build_result(
        document["workload"],
        document["driver"],
        workload.subscriptions_per_topic,
        report.outcome.intervals,
        document,
        report.outcome.phase_seconds,
    )
    checks = judge(thresholds, figures_of(result))
    document["slo"] = verdict_json(checks)
    if report.path is None:  # no directory took the result: it was printed without a verdict
        return checks
    try:
        write_json_atomic(report.path, document)
    except OSError as error:  # the verdict is shown all the same; the result stays as written
        log.warning("the --slo verdict could not be added to %s: %s", report.path, error)
    return checks


def format_checks(checks: list[Check]) -> str:
    """One line per threshold, its outcome and the measured value."""
    return "\n".join(
        f"slo: {'pass' if check.passed else 'FAIL'} {check.describe()}" for check in checks
    )
