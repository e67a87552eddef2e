"""What a run configured beyond OMB's one ``messageSize``: the size distribution and the
consumer delay, in words for the console summary and the HTML report.

Read from the workload the result echoes (``run.workload``), so a report of an old result, or
of one without either field, simply shows nothing extra.
"""

from __future__ import annotations

from typing import Any

from loadgen.spec.consumer_delay import ConsumerDelay

Result = dict[str, Any]


def _workload(result: Result) -> dict[str, Any]:
    return result.get("run", {}).get("workload", {}) or {}


def sizes_text(result: Result) -> str | None:
    """``100 B ×3, 4096 B ×1 (mean 1099 B)`` or ``uniform 100..4096 B (mean 2098 B)``."""
    workload = _workload(result)
    mean = workload.get("messageSize")
    if workload.get("messageSizes"):
        entries = ", ".join(f"{e['size']} B ×{e['weight']}" for e in workload["messageSizes"])
        return f"{entries} (mean {mean} B)"
    span = workload.get("messageSizeRange")
    if span:
        return f"uniform {span['min']}..{span['max']} B (mean {mean} B)"
    return None


def delay_text(result: Result) -> str | None:
    """``uniform 1ms..5ms per message, after receipt`` (end-to-end is recorded before it)."""
    raw = _workload(result).get("consumerDelay")
    if raw is None:
        return None
    return f"{ConsumerDelay.model_validate(raw).describe()} per message, after receipt"


def shape_rows(result: Result) -> list[tuple[str, str]]:
    """``(label, text)`` for each of the two that the run configured."""
    rows = [("message sizes", sizes_text(result)), ("consumer delay", delay_text(result))]
    return [(label, text) for label, text in rows if text is not None]


def format_shape(result: Result) -> str | None:
    """The console's line under the end-to-end aggregate, or ``None`` for OMB's fixed size and
    no delay."""
    rows = shape_rows(result)
    if not rows:
        return None
    shown = "; ".join(f"{label}: {text}" for label, text in rows)
    return f"Configured: {shown} (end-to-end is stamped on receipt, before any delay)"
