"""Intervals as plain records (JSON-ready dicts): what ``--json-lines`` and the probe print."""

from __future__ import annotations

from typing import Any

from loadgen.base import hdr
from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats

MB = 1024 * 1024
"""Throughput in MB/s is in binary megabytes, as OMB reports it."""


def latency_ms(
    histogram: hdr.Histogram, percentiles: tuple[float, ...] = (50, 99, 99.9)
) -> dict[str, float | None]:
    """``{"p50": ms, ..., "max": ms}``, Java-equal; ``None`` for each when nothing was recorded."""
    if histogram.total == 0:
        return dict.fromkeys([*(f"p{p:g}" for p in percentiles), "max"])
    points = {f"p{p:g}": hdr.value_at_percentile(histogram, p) / 1000 for p in percentiles}
    return {**points, "max": histogram.max / 1000}


def interval_record(stats: IntervalStats, backlog: int, phase: str) -> dict[str, Any]:
    """One stats interval: rates, backlog, errors and publish/e2e percentiles in ms."""
    seconds = stats.seconds
    return {
        "type": "interval",
        "phase": phase,
        "start_ms": stats.start_ms,
        "end_ms": stats.end_ms,
        "publish_rate": round(stats.sent / seconds, 1),
        "publish_mb_s": round(stats.bytes_sent / MB / seconds, 3),
        "consume_rate": round(stats.received / seconds, 1),
        "consume_mb_s": round(stats.bytes_received / MB / seconds, 3),
        "backlog": backlog,
        "publish_errors": stats.send_errors,
        "publish_ms": latency_ms(stats.histogram(PUBLISH)),
        "e2e_ms": latency_ms(stats.histogram(END_TO_END)),
    }
