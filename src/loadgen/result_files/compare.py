"""``loadgen compare``: a new result against a baseline, metric by metric, with a verdict.

Works on any OMB TestResult JSON (ours or OMB's own): throughput is the mean of the per-period
rates, latencies are the aggregated percentiles. A metric regresses when it is worse than the
baseline by more than the allowed fraction (lower throughput, higher latency). Shown but never
gating: max latencies (one outlier is not a trend) and publish delay (it measures the load
generator's punctuality, tens of µs, not the broker).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.formats.journal import SUFFIX, journal_path, result_from_journal

LATENCY_PERCENTILES = (("p50", "50pct"), ("p99", "99pct"), ("p99.9", "999pct"))
LATENCY_GROUPS = (  # label, field stem, unit, gated
    ("publish", "PublishLatency", "ms", True),
    ("end-to-end", "EndToEndLatency", "ms", True),
    ("publish from intended", "PublishFromIntendedLatency", "ms", True),
    ("publish delay", "PublishDelayLatency", "µs", False),
)


@dataclass(frozen=True)
class Row:
    metric: str
    unit: str
    baseline: float
    new: float
    higher_is_better: bool
    gated: bool

    @property
    def change(self) -> float | None:
        """Relative change, new vs baseline (+0.1 = 10 % higher); None for a zero baseline."""
        return None if self.baseline == 0 else self.new / self.baseline - 1

    def regressed(self, allowed: float) -> bool:
        change = self.change
        if not self.gated or change is None:
            return False
        return change < -allowed if self.higher_is_better else change > allowed


def load_result(path: Path) -> dict[str, Any]:
    """A result JSON, or the result rebuilt from a run's ``.journal`` (a run that died: also
    found from its result's name, which it never wrote)."""
    journal = journal_path(path)
    if path.suffix == SUFFIX or (path.suffix == ".json" and not path.exists() and journal.exists()):
        return result_from_journal(journal)
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read a result: {error}", file=str(path)) from None
    if not isinstance(document, dict) or "publishRate" not in document:
        raise ConfigError(
            "not an OMB TestResult (no publishRate)", file=str(path), allowed="a result JSON"
        )
    return document


def compare(baseline: dict[str, Any], new: dict[str, Any]) -> list[Row]:
    """Every metric present in both results."""
    rows = []
    for metric, field in (("publish rate", "publishRate"), ("consume rate", "consumeRate")):
        if baseline.get(field) and new.get(field):
            rows.append(Row(metric, "msg/s", fmean(baseline[field]), fmean(new[field]), True, True))
    for group, stem, unit, gated in LATENCY_GROUPS:
        points = [*LATENCY_PERCENTILES, ("max", "Max")]
        for label, suffix in points:
            field = f"aggregated{stem}{suffix}"
            if field in baseline and field in new:
                rows.append(
                    Row(
                        f"{group} {label}",
                        unit,
                        float(baseline[field]),
                        float(new[field]),
                        False,
                        gated and label != "max",
                    )
                )
    return rows


def describe(result: dict[str, Any]) -> str:
    return f"{result.get('workload', '?')} on {result.get('driver', '?')}"


def format_table(rows: list[Row], allowed: float) -> str:
    lines = [f"{'metric':<28}{'unit':>6}{'baseline':>14}{'new':>14}{'change':>10}  verdict"]
    for row in rows:
        change = "n/a" if row.change is None else f"{row.change:+.1%}"
        if row.regressed(allowed):
            verdict = "REGRESSION"
        elif not row.gated:
            verdict = "(not gated)"
        else:
            verdict = "ok"
        lines.append(
            f"{row.metric:<28}{row.unit:>6}{row.baseline:>14,.3f}{row.new:>14,.3f}"
            f"{change:>10}  {verdict}"
        )
    return "\n".join(lines)


def parse_fraction(text: str) -> float:
    """``10%`` or ``10`` → 0.1; a ConfigError naming the option otherwise."""
    try:
        value = float(text.strip().removesuffix("%")) / 100
    except ValueError:
        value = -1.0
    if not 0 <= value < 10:
        raise ConfigError(
            f"{text!r} is not a percentage",
            path="--max-regression",
            value=text,
            allowed="a percentage such as 10% (0 to 1000)",
        )
    return value
