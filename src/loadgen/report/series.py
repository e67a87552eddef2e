"""What the report plots, read from result documents: plain numbers, no drawing.

Kept apart from the figures so that every plotted point can be checked against the result it came
from. Works on loadgen's results and on OMB's own (which have no ``run`` or ``histograms`` block):
latency distributions come from the aggregated histogram when there is one, so that every point
is a Java-equal percentile, and from OMB's quantile map otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from loadgen.base import hdr
from loadgen.engine.stats import END_TO_END, PUBLISH
from loadgen.result_files.compare import describe_fault

OMB_INTERVAL_S = 10.0
"""OMB samples its stats every 10 s and does not say so in the result."""

MAX_NINES = 5.0
"""The distribution stops at 99.999 %, as OMB's charts do; beyond that a few values decide."""

MAX_PERCENTILE = 100.0 * (1.0 - 10.0**-MAX_NINES)
POINTS_PER_NINE = 40

LATENCY_FIELDS = {PUBLISH: "publishLatency", END_TO_END: "endToEndLatency"}
QUANTILE_FIELDS = {
    PUBLISH: "aggregatedPublishLatencyQuantiles",
    END_TO_END: "aggregatedEndToEndLatencyQuantiles",
}
OVER_TIME = (("p50", "50pct"), ("p99", "99pct"), ("p99.9", "999pct"), ("max", "Max"))
"""The latencies plotted over time: label and OMB field suffix."""


@dataclass(frozen=True)
class Series:
    """One line of a chart: ``x`` and ``y`` of equal length, ``label`` for the legend."""

    label: str
    x: Sequence[float]
    y: Sequence[float]


def interval_seconds(result: dict[str, Any]) -> float:
    """The length of one per-period sample: the run's stats interval, or OMB's 10 s."""
    options = result.get("run", {}).get("options", {})
    return float(options.get("stats_interval_s") or OMB_INTERVAL_S)


def _elapsed(result: dict[str, Any], count: int) -> list[float]:
    """Seconds since the measured phase began, at the end of each interval."""
    step = interval_seconds(result)
    return [step * (i + 1) for i in range(count)]


def started_at(result: dict[str, Any]) -> datetime | None:
    text = result.get("run", {}).get("startedAt")
    return datetime.fromisoformat(text) if text else None


def label(result: dict[str, Any]) -> str:
    """``workload · driver · start time``: short enough for a legend, unique for most reports."""
    parts = [str(result.get("workload", "?")), str(result.get("driver", "?"))]
    start = started_at(result)
    if start:
        parts.append(start.strftime("%m-%d %H:%M:%S"))
    return " · ".join(parts)


def throughput(result: dict[str, Any]) -> list[Series]:
    """Publish and consume rates (msg/s) per interval; a missing or empty list is left out."""
    series = []
    for name, field in (("publish", "publishRate"), ("consume", "consumeRate")):
        rates = result.get(field) or []
        if rates:
            series.append(Series(name, _elapsed(result, len(rates)), rates))
    return series


@dataclass(frozen=True)
class FaultBand:
    """Fault ``number`` (1-based, as the result lists it) on the time axis: from ``start`` to
    ``end``, in seconds since measurement began."""

    number: int
    label: str
    start: float
    end: float


def fault_bands(result: dict[str, Any]) -> list[FaultBand]:
    """Each fault that was made, from its ``startedAt`` to its ``endedAt``.

    The result has the faults' clock times but not the measured phase's: the phase began at
    most one poll (0.25 s) and the fault's own making before each fault's ``startedAt - at``,
    so the earliest of these is taken as its start. The fault that was quickest to make is
    drawn at its ``at``, the others as much later as they started."""
    made = [
        (number, fault)
        for number, fault in enumerate(result.get("faults") or [], 1)
        if fault.get("startedAt") is not None and fault.get("endedAt") is not None
    ]
    if not made:
        return []
    origin_ms = min(fault["startedAt"] - fault["at"] * 1000 for _, fault in made)
    return [
        FaultBand(
            number,
            f"fault {number}: {describe_fault(fault)}",
            (fault["startedAt"] - origin_ms) / 1000,
            (fault["endedAt"] - origin_ms) / 1000,
        )
        for number, fault in made
    ]


@lru_cache(maxsize=32)
def _decoded(metric: str, encoded: str) -> hdr.Histogram:
    """A result's aggregated histogram, decoded once: the summary table and every chart ask for
    it, and results are read-only here."""
    return hdr.decode(metric, encoded)


def has_latency(result: dict[str, Any], metric: str) -> bool:
    """Whether anything was measured for ``metric`` (no consumers: no end-to-end latency)."""
    histograms = result.get("histograms")
    if histograms and metric in histograms:
        return _decoded(metric, histograms[metric]["aggregated"]).total > 0
    return bool(result.get(QUANTILE_FIELDS[metric]))


def latency_over_time(result: dict[str, Any], metric: str) -> list[Series]:
    """p50, p99, p99.9 and max (ms) per interval, labelled by percentile; empty when unmeasured."""
    if not has_latency(result, metric):
        return []
    stem = LATENCY_FIELDS[metric]
    series = []
    for name, suffix in OVER_TIME:
        values = result.get(f"{stem}{suffix}") or []
        if values:
            series.append(Series(name, _elapsed(result, len(values)), values))
    return series


def nines(percentile: float) -> float:
    """The x position of a percentile on a "nines" axis: 1 / (1 - p); 90 % → 10, 99 % → 100."""
    return 1.0 / (1.0 - percentile / 100.0)


def distribution(result: dict[str, Any], metric: str) -> Series:
    """Latency (ms) against percentile (``x`` in %, 0 up to 99.999); empty when unmeasured."""
    histograms = result.get("histograms")
    if histograms and metric in histograms:
        histogram = _decoded(metric, histograms[metric]["aggregated"])
        return _from_histogram(histogram)
    quantiles = {float(p): float(v) for p, v in (result.get(QUANTILE_FIELDS[metric]) or {}).items()}
    shown = sorted(p for p in quantiles if p <= MAX_PERCENTILE)
    return Series(metric, shown, [quantiles[p] for p in shown])


def _from_histogram(histogram: hdr.Histogram) -> Series:
    """Evenly spaced on the nines axis, up to where one value decides the percentile."""
    total = histogram.total
    if total == 0:
        return Series(histogram.metric, [], [])
    top = min(MAX_NINES, np.log10(total))
    steps = np.linspace(0.0, top, max(2, int(top * POINTS_PER_NINE) + 1))
    percentiles = [100.0 * (1.0 - 10.0**-k) for k in steps.tolist()]
    values = [hdr.value_at_percentile(histogram, p) / 1000.0 for p in percentiles]
    return Series(histogram.metric, percentiles, values)
