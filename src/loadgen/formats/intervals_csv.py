"""``loadgen run --csv FILE``: one row per stats interval and a summary row, for spreadsheets.

The columns are stable (documented in the README) and every number is the one the result JSON
holds: rates as its ``publishRate``/``consumeRate`` lists, latencies from the same histograms
with the same percentiles (all in ms here, publish delay included, where the JSON has µs).
Warm-up rows are included, marked by ``phase``; the ``summary`` row covers the measured phase
and ends with the run's verdicts (``true``/``false``, empty when not judged; empty on interval
rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.base.files import write_csv_atomic
from loadgen.engine import stats as metrics
from loadgen.engine.stats import IntervalStats, measured_intervals, merge_all
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
)


def _row(
    phase: str, stats: IntervalStats, seconds: float, backlog: int, verdicts: Sequence[str] = NONE
) -> list[Any]:
    row: list[Any] = [phase, stats.start_ms, stats.end_ms, seconds, stats.sent, stats.received]
    row += [stats.send_errors, stats.sent / seconds, stats.received / seconds, backlog]
    for _, metric in LATENCY_COLUMNS:
        row += latency_fields(stats.histogram(metric), lambda micros: micros / 1000.0)
    return row + list(verdicts)


def interval_rows(
    intervals: Sequence[IntervalStats],
    subscriptions: int,
    verdicts: Mapping[str, Any] | None = None,
) -> list[list[Any]]:
    """A row per interval (warm-up and measured), then the measured phase's summary row.

    ``backlog`` is the JSON's: sent × subscriptions − received over the run so far.
    ``verdicts`` is the result's block of that name (none: the verdict cells stay empty).
    """
    rows, sent, received = [], 0, 0
    for stats in intervals:
        sent, received = sent + stats.sent, received + stats.received
        backlog = max(0, subscriptions * sent - received)
        rows.append(_row("warmup" if stats.warmup else "measured", stats, stats.seconds, backlog))
    measured = measured_intervals(intervals)
    if measured:
        whole = merge_all(measured)
        seconds = sum(s.seconds for s in measured)
        answers = flat_verdicts(verdicts)
        judged = [csv_cell(answers.get(field)) for field in VERDICT_COLUMNS.values()]
        rows.append(_row("summary", whole, seconds, rows[-1][COLUMNS.index("backlog")], judged))
    return rows


def write_intervals_csv(
    path: Path,
    intervals: Sequence[IntervalStats],
    subscriptions: int,
    verdicts: Mapping[str, Any] | None = None,
) -> Path:
    write_csv_atomic(path, COLUMNS, interval_rows(intervals, subscriptions, verdicts))
    return path
