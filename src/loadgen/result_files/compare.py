"""``loadgen compare``: a new result against a baseline, metric by metric, with a verdict.

Works on any OMB TestResult JSON (ours or OMB's own): throughput is the mean of the per-period
rates, latencies are the aggregated percentiles. A metric regresses when it is worse than the
baseline by more than the allowed fraction (lower throughput, higher latency). Shown but never
gating: max latencies (one outlier is not a trend) and publish delay (it measures the load
generator's punctuality, tens of µs, not the broker).

Faults made inside the runs (issue #56) are lined up by order, fault 1 with fault 1: what each
was, how long publishing stopped, how long recovery took and what was lost. They are shown,
never gated: two runs' faults hit different nodes at different moments, so their figures say
what happened rather than whether the broker got worse.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


def describe_fault(fault: dict[str, Any]) -> str:
    """``kill node 2``, ``pause node 3 (leader)``, ``command``: what the fault did, in the
    console's words, with the node a leader target turned out to be."""
    action, target, node = fault.get("action", "?"), fault.get("target"), fault.get("node")
    if node is None:
        return str(action) if target is None else f"{action} {target}"
    return f"{action} node {node}" + (" (leader)" if target == "leader" else "")


FAULT_FIGURES: tuple[tuple[str, str, str, Callable[[float], str]], ...] = (
    ("unavailable", "s", "unavailableSeconds", lambda v: f"{v:,.3f}"),
    ("recovery", "s", "recoverySeconds", lambda v: f"{v:,.3f}"),
    ("lost", "", "lost", lambda v: f"{v:,.0f}"),
    ("duplicated", "", "duplicated", lambda v: f"{v:,.0f}"),
)
"""What ``compare`` shows of each fault: label, unit, result field, format."""


def line_up_faults(
    baseline: dict[str, Any], new: dict[str, Any]
) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
    """Fault 1 with fault 1, and so on; ``None`` on the side that had fewer faults."""
    before, after = baseline.get("faults") or [], new.get("faults") or []
    return [
        (before[i] if i < len(before) else None, after[i] if i < len(after) else None)
        for i in range(max(len(before), len(after)))
    ]


def _fault_value(fault: dict[str, Any] | None, field: str, shown: Callable[[float], str]) -> str:
    """The figure, or a dash (no such fault, no recovery shown, losses not accounted): the notes
    under the fault say why."""
    value = None if fault is None else fault.get(field)
    return "—" if value is None else shown(value)


def _fault_change(before: dict[str, Any] | None, after: dict[str, Any] | None, field: str) -> str:
    """The new value minus the baseline's, in the figure's unit: a fault's outage of 0 s is a
    normal baseline, which a relative change cannot compare with."""
    old = None if before is None else before.get(field)
    value = None if after is None else after.get(field)
    if old is None or value is None:
        return "n/a"
    return f"{value - old:+,.3f}" if field.endswith("Seconds") else f"{value - old:+,.0f}"


def _fault_title(number: int, before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if after is None:
        return f"fault {number}: {describe_fault(before or {})} (baseline only)"
    if before is None:
        return f"fault {number}: {describe_fault(after)} (new only)"
    old, now = describe_fault(before), describe_fault(after)
    if old == now:
        return f"fault {number}: {old}"
    return f"fault {number}: {old} (baseline), {now} (new)"


def _fault_notes(side: str, fault: dict[str, Any] | None) -> list[str]:
    """Why a side's fault has no figure: not made, or not shown recovered."""
    if fault is None:
        return []
    if fault.get("error"):
        return [
            f"  {side}: {'not made' if fault.get('startedAt') is None else 'failed'}: "
            f"{fault['error']}"
        ]
    if fault.get("recoverySeconds") is None and fault.get("recoveryReason"):
        return [f"  {side}: not shown recovered: {fault['recoveryReason']}"]
    return []


def format_faults(baseline: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The faults of both runs lined up under the metric table's columns; ``None`` when neither
    run had faults. When only one had, that is what it says."""
    before, after = baseline.get("faults") or [], new.get("faults") or []
    if not before and not after:
        return None
    if not before or not after:
        which, count = ("new", len(after)) if after else ("baseline", len(before))
        other = "baseline" if after else "new"
        return f"faults: the {which} run had {count}, the {other} run none: nothing to line up"
    lines = ["faults, lined up by order (shown, not gated):"]
    for number, (old, now) in enumerate(line_up_faults(baseline, new), 1):
        lines.append(_fault_title(number, old, now))
        for label, unit, field, shown in FAULT_FIGURES:
            lines.append(
                f"{'  ' + label:<28}{unit:>6}{_fault_value(old, field, shown):>14}"
                f"{_fault_value(now, field, shown):>14}{_fault_change(old, now, field):>10}"
            )
        lines += _fault_notes("baseline", old) + _fault_notes("new", now)
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
