"""The threshold language of ``--slo``, the probe and :func:`loadgen.assert_slo`: parse, then judge.

One grammar everywhere, so a threshold copied from a CI job works in a test and in a probe::

    LATENCY.STAT OP NUMBER UNIT    e2e.p99<20ms   publish.p50<=5ms   publishDelay.p99.9<1ms
    COUNT OP NUMBER                rate>=0.99     lost==0            backlog.growth<1000
    VERDICT                        rate.held      consumers.keptUp   drain.completed

Latencies are judged on the aggregated histogram of the measured phase (warm-up excluded), with
Java HdrHistogram's percentiles, so the measured value is the one the result JSON reports.
A figure that was not measured (no consumers for ``e2e``, no id accounting for ``lost``) fails
its threshold: a limit nobody could check is no pass.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
)
from loadgen.formats.faults import fault_counts
from loadgen.formats.run_verdicts import ANSWERS, asked_rate
from loadgen.running.result import Result

LATENCIES = {
    "publish": PUBLISH,
    "publishDelay": PUBLISH_DELAY,
    "publishFromIntended": PUBLISH_FROM_INTENDED,
    "e2e": END_TO_END,
    "endToEnd": END_TO_END,
    "e2eFromIntended": END_TO_END_FROM_INTENDED,
    "endToEndFromIntended": END_TO_END_FROM_INTENDED,
}
"""Latency names in an expression → the histogram each judges (``endToEnd`` is ``e2e``)."""
STATS = ("p50", "p75", "p95", "p99", "p99.9", "p99.99", "max", "avg")
COUNTS = {
    "rate": "publish rate over the asked producerRate (0.99 = 99 %)",
    "publishRate": "messages sent per second",
    "consumeRate": "messages received per second",
    "errors": "send errors",
    "lost": "acknowledged messages never received",
    "duplicates": "messages received more than once",
    "abortedRead": "messages of transactions aborted on purpose that a consumer read",
    "missing": "messages not received when the drain ended",
    "backlog.growth": "messages the backlog grew by over the steady phase (verdicts.consumers)",
    "backlog.trend": "msg/s the backlog grew at over the steady phase (its least-squares slope)",
    "fault.lost": "messages lost around the run's faults (faults[].lost, summed)",
}
DURATIONS = {
    "fault.recovery": "the longest time a fault took to recover from (infinite when one never did)",
    "fault.unavailable": "the longest stretch a fault left with no acknowledged publish",
}
"""Figures that are times: written with a unit (us, ms, s; s when none), judged in µs."""
VERDICTS = {f"{block}.{key}": (block, key) for block, key in ANSWERS}
"""A verdict's name → where the result's ``verdicts`` block answers it (:mod:`.run_verdicts`);
written alone, it passes when the answer is true."""
UNITS = {"us": 1.0, "µs": 1.0, "ms": 1_000.0, "s": 1_000_000.0}
"""Latency units → µs (the histograms' unit)."""
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "<": operator.lt,
    ">": operator.gt,
}
EXPRESSION = re.compile(
    r"^\s*(?P<name>[A-Za-z][A-Za-z0-9]*)(?:\.(?P<stat>[A-Za-z0-9.]+?))?\s*(?P<op><=|>=|==|<|>)\s*"
    r"(?P<number>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>[A-Za-zµ]+)?\s*$"
)
ALLOWED = (
    f"LATENCY.STAT OP NUMBER UNIT, COUNT OP NUMBER or VERDICT; LATENCY: {', '.join(LATENCIES)}; "
    f"STAT: {', '.join(STATS)}; UNIT: us, ms, s; COUNT: {', '.join(COUNTS)}; "
    f"TIME (with a UNIT): {', '.join(DURATIONS)}; "
    f"VERDICT: {', '.join(VERDICTS)}; OP: {' '.join(OPERATORS)}"
)


@dataclass(frozen=True)
class Threshold:
    """One parsed expression; ``limit`` is in µs for latencies, as written for counts."""

    text: str
    name: str
    stat: str | None
    op: str
    limit: float
    unit: str | None

    @property
    def scale(self) -> float:
        """µs per unit of the expression (1 for counts)."""
        return UNITS[self.unit] if self.unit else 1.0


@dataclass(frozen=True)
class Check:
    """A threshold and what the run measured (in the expression's unit; ``None``: nothing)."""

    threshold: Threshold
    measured: float | None
    passed: bool

    def describe(self) -> str:
        unit = f" {self.threshold.unit}" if self.threshold.unit else ""
        if self.measured is None:
            shown = "not judged" if self.threshold.name in VERDICTS else "not measured"
        elif self.threshold.name in VERDICTS:
            shown = "yes" if self.measured else "no"
        else:
            shown = f"measured {self.measured:.6g}{unit}"
        return f"{self.threshold.text}: {shown}"

    def to_json(self) -> dict[str, Any]:
        """``measured`` is null for a figure that is infinite (a fault never recovered from):
        JSON has no infinity."""
        finite = self.measured is not None and math.isfinite(self.measured)
        return {
            "expr": self.threshold.text,
            "measured": self.measured if finite else None,
            "unit": self.threshold.unit,
            "passed": self.passed,
        }


def parse(text: str, option: str = "--slo") -> Threshold:
    """Parse one expression; a ConfigError names it and the allowed grammar when it is bad."""
    if text.strip() in VERDICTS:  # a verdict holds: its answer is 1 (true)
        return Threshold(text.strip(), text.strip(), None, "==", 1.0, None)
    match = EXPRESSION.match(text)
    if match is None:
        raise ConfigError(f"not a threshold: {text!r}", path=option, allowed=ALLOWED)
    name, stat, op, unit = match["name"], match["stat"], match["op"], match["unit"]

    def bad(reason: str) -> ConfigError:
        return ConfigError(f"{text!r}: {reason}", path=option, allowed=ALLOWED)

    if name in LATENCIES:
        if stat not in STATS:
            raise bad(f"{name} needs one of {', '.join(STATS)} after a dot, e.g. {name}.p99")
        if unit not in UNITS:
            raise bad("a latency needs a unit: us, ms or s")
        return Threshold(text.strip(), name, stat, op, float(match["number"]) * UNITS[unit], unit)
    count = name if stat is None else f"{name}.{stat}"
    if count in DURATIONS:
        unit = unit or "s"
        if unit not in UNITS:
            raise bad(f"{count} is a time: us, ms or s")
        return Threshold(text.strip(), count, None, op, float(match["number"]) * UNITS[unit], unit)
    if count in VERDICTS:
        raise bad(f"{count} is a verdict: write it alone, without OP NUMBER")
    if name in COUNTS and (stat is not None or unit is not None):
        raise bad(f"{name} is a count: no .STAT and no unit")
    if count not in COUNTS:
        family = any(known.startswith(f"{name}.") for known in COUNTS)
        raise bad(f"unknown metric {count if family else name!r}")
    if unit is not None:
        raise bad(f"{count} is a count: no unit")
    return Threshold(text.strip(), count, None, op, float(match["number"]), None)


def parse_all(texts: tuple[str, ...] | list[str], option: str = "--slo") -> tuple[Threshold, ...]:
    return tuple(parse(text, option) for text in texts)


@dataclass(frozen=True)
class Figures:
    """What thresholds are judged on: aggregated histograms (µs) by metric, and the counts."""

    histograms: Mapping[str, hdr.Histogram]
    counts: Mapping[str, float | None]

    def value(self, threshold: Threshold) -> float | None:
        """The measured figure in the expression's unit, ``None`` when nothing was measured."""
        if threshold.stat is None:
            count = self.counts.get(threshold.name)
            return None if count is None else count / threshold.scale
        histogram = self.histograms.get(LATENCIES[threshold.name])
        if histogram is None or histogram.total == 0:
            return None
        if threshold.stat == "max":
            micros = float(histogram.max)
        elif threshold.stat == "avg":
            micros = hdr.mean(histogram)
        else:
            micros = float(hdr.value_at_percentile(histogram, float(threshold.stat[1:])))
        return micros / threshold.scale


def judge(thresholds: tuple[Threshold, ...], figures: Figures) -> list[Check]:
    checks = []
    for threshold in thresholds:
        measured = figures.value(threshold)
        limit = threshold.limit / threshold.scale
        passed = measured is not None and OPERATORS[threshold.op](measured, limit)
        checks.append(Check(threshold, measured, passed))
    return checks


def figures_of(result: Result) -> Figures:
    """The figures of a run's measured phase, from the Python API's :class:`Result`."""
    asked = asked_rate(result.document.get("run", {}).get("workload", {}))
    histograms = {
        PUBLISH: result.publish.histogram,
        PUBLISH_DELAY: result.publish_delay.histogram,
        PUBLISH_FROM_INTENDED: result.publish_from_intended.histogram,
        END_TO_END: result.e2e.histogram,
        END_TO_END_FROM_INTENDED: result.e2e_from_intended.histogram,
    }
    counts: dict[str, float | None] = {
        "rate": None if asked is None else result.publish_rate / asked,
        "publishRate": result.publish_rate,
        "consumeRate": result.consume_rate,
        "errors": result.errors,
        "lost": result.lost,
        "duplicates": result.duplicates,
        "abortedRead": result.document.get("totalAbortedRead"),
        "missing": result.missing,
        **fault_counts(result.document.get("faults", ())),
    }
    return Figures(histograms, counts | verdict_counts(result.document.get("verdicts", {})))


def verdict_counts(verdicts: Mapping[str, Any]) -> dict[str, float | None]:
    """The ``verdicts`` block's answers as figures: 1 or 0 for a verdict (``None``: not
    judged), and the backlog's growth and trend."""
    figures: dict[str, float | None] = {}
    for name, (block, key) in VERDICTS.items():
        answer = verdicts.get(block, {}).get(key)
        figures[name] = None if answer is None else float(answer)
    consumers = verdicts.get("consumers", {})
    figures["backlog.growth"] = consumers.get("growth")
    figures["backlog.trend"] = consumers.get("trend")
    return figures


def verdict_json(checks: list[Check]) -> dict[str, Any]:
    """The result JSON's ``slo`` field."""
    return {"passed": all(c.passed for c in checks), "checks": [c.to_json() for c in checks]}
