"""Rate sweeps and SLO search: the same workload run at several rates, one result per rate.

A sweep runs a list of rates and tabulates latency against rate. An SLO search looks for the
highest rate whose publish or end-to-end p99 stays under a bound, by bisection between two
rates over short runs: it first tries the high end (done if it passes) and the low end (no
answer if that fails), then the geometric middle of the highest passing and lowest failing rate
until they are within ``tolerance`` of each other or the run budget is spent. The middle is
geometric because rates of interest span orders of magnitude (1k to 1M). A rate passes only if
its run completed, sent at least :data:`MIN_ACHIEVED` of the target (a broker that cannot keep
up must not pass on the latency of the messages it did take) and kept the p99 under the bound.
Every run is kept as evidence, with the reason it failed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from loadgen.base.errors import ConfigError, RunAborted
from loadgen.engine.outcome import SavedRun
from loadgen.formats.verdict_columns import flat_verdicts
from loadgen.result_files.compare import load_result
from loadgen.spec import Workload
from loadgen.spec.units import RATE_ALLOWED, parse_rate

MIN_ACHIEVED = 0.95
"""A rate passes an SLO only if the run sent at least this fraction of it."""
METRICS = {"publish": "aggregatedPublishLatency", "e2e": "aggregatedEndToEndLatency"}
"""SLO metric names on the command line -> the result fields of their percentiles."""
POINTS = (("p50", "50pct"), ("p99", "99pct"), ("p99.9", "999pct"))
RANGE = re.compile(r"([^:]+):([^:]+):(\d+)")
RATES_ALLOWED = f"RATE,RATE,... or START:STOP:COUNT (COUNT >= 2); a rate is {RATE_ALLOWED}"


def parse_rates(text: str, option: str) -> list[float]:
    """``1k,5k,10k`` as listed, or ``10k:100k:4`` as 4 evenly spaced rates from 10k to 100k."""
    if match := RANGE.fullmatch(text.strip()):
        start, stop = (parse_rate(match.group(i), option) for i in (1, 2))
        count = int(match.group(3))
        if count < 2 or stop <= start:
            raise ConfigError(
                "a range needs STOP above START and a COUNT of at least 2",
                path=option,
                value=text,
                allowed=RATES_ALLOWED,
            )
        return [start + (stop - start) * i / (count - 1) for i in range(count)]
    try:
        return [parse_rate(part.strip(), option) for part in text.split(",")]
    except ConfigError:
        raise ConfigError(
            f"{text!r} is not a list or range of rates",
            path=option,
            value=text,
            allowed=RATES_ALLOWED,
        ) from None


def parse_search(text: str, option: str) -> tuple[float, float]:
    """``LOW:HIGH``: the rates an SLO search runs between."""
    parts = text.split(":")
    allowed = f"LOW:HIGH with LOW < HIGH; a rate is {RATE_ALLOWED}"
    if len(parts) != 2:
        raise ConfigError(f"{text!r} is not LOW:HIGH", path=option, value=text, allowed=allowed)
    low, high = (parse_rate(part.strip(), option) for part in parts)
    if low >= high:
        raise ConfigError("LOW must be below HIGH", path=option, value=text, allowed=allowed)
    return low, high


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: the rate asked for, what it achieved, its latencies (ms)."""

    target_rate: float
    publish_rate: float
    latencies: dict[str, dict[str, float]]
    """``{"publish": {"p50": ..., "p99": ..., "p99.9": ...}, "e2e": {...}}``"""
    result: str
    incomplete: bool
    failed_because: str | None = None
    """For an SLO search: why this rate did not pass (None: it passed, or no SLO)."""
    verdicts: Mapping[str, bool | None] = field(default_factory=dict)
    """The run's ``rateHeld``, ``consumersKeptUp``, ``drainCompleted`` (a catch-up run's);
    empty for a result written before verdicts (:mod:`loadgen.formats.verdict_columns`)."""

    def to_json(self) -> dict[str, Any]:
        document = {
            "targetRate": self.target_rate,
            "publishRate": self.publish_rate,
            "publishLatency": self.latencies["publish"],
            "endToEndLatency": self.latencies["e2e"],
            "result": self.result,
            "incomplete": self.incomplete,
            **self.verdicts,
        }
        if self.failed_because is not None:
            document["failedBecause"] = self.failed_because
        return document


def point_from_result(rate: float, path: str, result: dict[str, Any]) -> SweepPoint:
    rates = result.get("publishRate") or [0.0]
    latencies = {
        metric: {label: result[f"{prefix}{suffix}"] for label, suffix in POINTS}
        for metric, prefix in METRICS.items()
    }
    return SweepPoint(
        rate,
        fmean(rates),
        latencies,
        path,
        bool(result.get("incomplete")),
        verdicts=flat_verdicts(result.get("verdicts")),
    )


def at_rate(workload: Workload, rate: float) -> Workload:
    """``workload`` at a fixed ``rate`` (no discovery, no profile), named after the rate."""
    name = f"{workload.name or 'workload'} rate {rate:.0f}"
    return workload.model_copy(
        update={"producer_rate": rate, "producer_rate_profile": None, "name": name}
    )


def measure_point(
    workload: Workload, rate: float, run: Callable[[Workload], SavedRun]
) -> SweepPoint:
    """Run ``workload`` at ``rate`` with ``run`` (which writes the result file).

    A run cut short by an error is a point marked incomplete (its partial result was written);
    Ctrl-C ends the sweep.
    """
    try:
        saved = run(at_rate(workload, rate))
    except RunAborted as aborted:
        if aborted.reason == "interrupted" or aborted.result_path is None:
            raise
        return partial_point(rate, aborted.result_path)
    return point_from_result(rate, str(saved.path), saved.result)


def partial_point(rate: float, path: str) -> SweepPoint:
    """The point of a run cut short, from the partial result it wrote."""
    return point_from_result(rate, path, load_result(Path(path)))


Measure = Callable[[float], SweepPoint]


@dataclass(frozen=True)
class Slo:
    """``metric`` (``publish`` or ``e2e``) p99 at most ``p99_ms``."""

    metric: Literal["publish", "e2e"]
    p99_ms: float

    def failure(self, point: SweepPoint) -> str | None:
        """Why ``point`` misses the SLO, or None when it meets it."""
        if point.incomplete:
            return "the run did not complete"
        if point.publish_rate < MIN_ACHIEVED * point.target_rate:
            return (
                f"sent {point.publish_rate:,.0f} msg/s, under {MIN_ACHIEVED:.0%} of "
                f"{point.target_rate:,.0f}"
            )
        p99 = point.latencies[self.metric]["p99"]
        if p99 > self.p99_ms:
            return f"{self.metric} p99 {p99:.3f} ms > {self.p99_ms:g} ms"
        return None

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "p99Ms": self.p99_ms}


@dataclass
class Search:
    """An SLO search's answer and the runs behind it, in the order they ran."""

    slo: Slo
    low: float
    high: float
    highest_rate: float | None = None
    points: list[SweepPoint] = field(default_factory=list)


def highest_passing(
    passes: Callable[[float], bool], low: float, high: float, max_runs: int, tolerance: float
) -> float | None:
    """The highest rate in [low, high] for which ``passes`` holds, by bisection (see module)."""
    if max_runs < 2:
        raise ValueError("a search needs at least two runs (the two ends)")
    if passes(high):
        return high
    if not passes(low):
        return None
    good, bad = low, high
    for _ in range(max_runs - 2):
        if bad <= good * (1 + tolerance):
            break
        middle = round(math.sqrt(good * bad))
        if middle <= good or middle >= bad:
            break  # nothing left between them at 1 msg/s resolution
        if passes(middle):
            good = middle
        else:
            bad = middle
    return good


def search(
    measure: Measure, slo: Slo, low: float, high: float, max_runs: int, tolerance: float
) -> Search:
    """Find the highest rate meeting ``slo``; every run becomes evidence."""
    found = Search(slo, low, high)

    def passes(rate: float) -> bool:
        point = measure(rate)
        failure = slo.failure(point)
        if failure is not None:
            point = replace(point, failed_because=failure)
        found.points.append(point)
        return failure is None

    found.highest_rate = highest_passing(passes, low, high, max_runs, tolerance)
    return found


def sweep_document(
    workload: str, driver: str, points: Sequence[SweepPoint], found: Search | None = None
) -> dict[str, Any]:
    """The sweep's summary file: every point (with its result file) and the search's answer."""
    document: dict[str, Any] = {
        "workload": workload,
        "driver": driver,
        "kind": "slo-search" if found else "sweep",
        "points": [point.to_json() for point in points],
    }
    if found is not None:
        document["slo"] = found.slo.to_json() | {
            "low": found.low,
            "high": found.high,
            "highestRate": found.highest_rate,
        }
    return document
