"""``loadgen run --csv FILE``: one row per stats interval and a summary row, for spreadsheets.

The columns are stable (documented in the README) and every number is the one the result JSON
holds: rates as its ``publishRate``/``consumeRate`` lists, latencies from the same histograms
with the same percentiles (all in ms here, publish delay included, where the JSON has µs).
Warm-up rows are included, marked by ``phase``; the ``summary`` row covers the measured phase
and ends with the run's verdicts (``true``/``false``, empty when not judged; empty on interval
rows), then its faults (:data:`FAULT_COLUMNS`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.base.files import write_csv_atomic
from loadgen.engine import stats as metrics
from loadgen.engine.stats import IntervalStats, measured_intervals, merge_all
from loadgen.formats.faults import fault_counts
from loadgen.formats.result_json import latency_fields
from loadgen.formats.verdict_columns import csv_cell, flat_verdicts

LATENCY_COLUMNS = (
    ("publish", metrics.PUBLISH),
    ("publish_delay", metrics.PUBLISH_DELAY),
    ("e2e", metrics.END_TO_END),
    ("publish_from_intended", metrics.PUBLISH_FROM_INTENDED),
    ("e2e_from_intended", metrics.END_TO_END_FROM_INTENDED),
)
STATS = ("avg", "p50", "p75", "p95", "p99", "p99_9", "p99_99", "max")
"""In the order of :func:`loadgen.formats.result_json.latency_fields`."""
VERDICT_COLUMNS = {
    "rate_held": "rateHeld",
    "consumers_kept_up": "consumersKeptUp",
    "drain_completed": "drainCompleted",
    "faults_recovered": "faultsRecovered",
}
"""Column -> the result's verdict (:mod:`loadgen.formats.verdict_columns`), on the summary row."""
NONE = ("",) * len(VERDICT_COLUMNS)
"""The verdict cells of an interval row."""
FAULT_COLUMNS = ("fault", "fault_unavailable_s", "fault_recovery_s", "fault_lost")
"""A run with faults (the result's ``faults``): on an interval row, the numbers (from 1) of the
faults on during it; on the summary row, the longest unavailability and recovery (empty when
one never recovered) and the faults' losses."""
COLUMNS = (
    "phase",
    "start_ms",
    "end_ms",
    "seconds",
    "sent",
    "received",
    "errors",
    "publish_rate",
    "consume_rate",
    "backlog",
    *(f"{prefix}_{stat}_ms" for prefix, _ in LATENCY_COLUMNS for stat in STATS),
    *VERDICT_COLUMNS,
    *FAULT_COLUMNS,
)


def _row(
    phase: str, stats: IntervalStats, seconds: float, backlog: int, tail: Sequence[Any]
) -> list[Any]:
    row: list[Any] = [phase, stats.start_ms, stats.end_ms, seconds, stats.sent, stats.received]
    row += [stats.send_errors, stats.sent / seconds, stats.received / seconds, backlog]
    for _, metric in LATENCY_COLUMNS:
        row += latency_fields(stats.histogram(metric), lambda micros: micros / 1000.0)
    return row + list(tail)


def _faults_on(stats: IntervalStats, faults: Sequence[Mapping[str, Any]]) -> str:
    """The numbers of the faults made that overlap the interval, ``;``-separated."""
    return ";".join(
        str(number)
        for number, fault in enumerate(faults, start=1)
        if fault.get("startedAt") is not None
        and fault["startedAt"] < stats.end_ms
        and (fault.get("endedAt") or fault["startedAt"]) >= stats.start_ms
    )


def _fault_summary(faults: Sequence[Mapping[str, Any]]) -> list[Any]:
    if not faults:
        return [""] * len(FAULT_COLUMNS)
    counts = fault_counts(faults)
    recovery, outage, lost = (
        counts["fault.recovery"],
        counts["fault.unavailable"],
        counts["fault.lost"],
    )
    finite = recovery is not None and math.isfinite(recovery)
    return [
        "",
        "" if outage is None else outage / 1e6,
        recovery / 1e6 if finite else "",
        "" if lost is None else lost,
    ]


def interval_rows(
    intervals: Sequence[IntervalStats],
    subscriptions: int,
    verdicts: Mapping[str, Any] | None = None,
    faults: Sequence[Mapping[str, Any]] = (),
) -> list[list[Any]]:
    """A row per interval (warm-up and measured), then the measured phase's summary row.

    ``backlog`` is the JSON's: sent × subscriptions − received over the run so far.
    ``verdicts`` and ``faults`` are the result's blocks of those names (none: their cells stay
    empty).
    """
    rows, sent, received = [], 0, 0
    for stats in intervals:
        sent, received = sent + stats.sent, received + stats.received
        backlog = max(0, subscriptions * sent - received)
        phase = "warmup" if stats.warmup else "measured"
        tail = [*NONE, _faults_on(stats, faults), "", "", ""]
        rows.append(_row(phase, stats, stats.seconds, backlog, tail))
    measured = measured_intervals(intervals)
    if measured:
        whole = merge_all(measured)
        seconds = sum(s.seconds for s in measured)
        answers = flat_verdicts(verdicts)
        judged = [csv_cell(answers.get(field)) for field in VERDICT_COLUMNS.values()]
        tail = judged + _fault_summary(faults)
        rows.append(_row("summary", whole, seconds, rows[-1][COLUMNS.index("backlog")], tail))
    return rows


def write_intervals_csv(
    path: Path,
    intervals: Sequence[IntervalStats],
    subscriptions: int,
    verdicts: Mapping[str, Any] | None = None,
    faults: Sequence[Mapping[str, Any]] = (),
) -> Path:
    write_csv_atomic(path, COLUMNS, interval_rows(intervals, subscriptions, verdicts, faults))
    return path
