"""``producerRateProfile``: a list of steps and ramps that drives the rate of the measured phase.

loadgen's extension of the OMB workload (OMB has nothing like it)::

    producerRateProfile:
      - {rate: 10k, duration: 1m}      # hold 10 000 msg/s for a minute
      - {rampTo: 100k, duration: 2m}   # then climb linearly to 100 000 msg/s over two minutes
      - {rate: 1M, duration: 30s}

A rate is a positive number of msg/s (the whole workload, like ``producerRate``), optionally
with a ``k``, ``M`` or ``G`` suffix (:mod:`.units`); a duration is seconds or a duration text
(``30s``, ``1m30s``).
A ramp starts from the rate before it (``producerRate`` when the profile opens with a ramp).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loadgen.base.errors import ConfigError
from loadgen.spec.durations import parse_duration
from loadgen.spec.units import parse_rate

FIELD = "producerRateProfile"
STEP_KEYS = {"rate", "duration"}
RAMP_KEYS = {"rampTo", "duration"}
SEGMENT_SHAPES = "{rate: RATE, duration: DURATION} or {rampTo: RATE, duration: DURATION}"


@dataclass(frozen=True)
class RateSegment:
    """Hold ``rate`` (``step``), or move linearly to it (``ramp``), for ``duration_s``."""

    kind: Literal["step", "ramp"]
    rate: float
    duration_s: float


def _duration(value: Any, path: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = parse_duration(value, option=path)
    else:
        seconds = -1.0
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ConfigError(
            f"{value!r} is not a positive duration",
            path=path,
            value=value,
            allowed="seconds or a duration such as 30s, 5m, 1m30s",
        )
    return seconds


def parse_segment(raw: Any, index: int) -> RateSegment:
    path = f"{FIELD}.{index}"
    if not isinstance(raw, dict):
        raise ConfigError(
            "a profile segment must be a mapping", path=path, value=raw, allowed=SEGMENT_SHAPES
        )
    keys = set(raw)
    if keys not in (STEP_KEYS, RAMP_KEYS):
        unknown = sorted(keys - STEP_KEYS - RAMP_KEYS)
        problem = (
            f"unknown field {unknown[0]!r}"
            if unknown
            else "a segment has either rate or rampTo, and a duration"
        )
        raise ConfigError(problem, path=path, value=raw, allowed=SEGMENT_SHAPES)
    duration = _duration(raw["duration"], f"{path}.duration")
    if "rate" in keys:
        return RateSegment("step", parse_rate(raw["rate"], f"{path}.rate"), duration)
    return RateSegment("ramp", parse_rate(raw["rampTo"], f"{path}.rampTo"), duration)


def parse_profile(raw: Any) -> tuple[RateSegment, ...] | None:
    """The segments of ``raw`` (the YAML list), or ConfigError naming the first bad one."""
    if raw is None:
        return None
    if isinstance(raw, tuple) and all(isinstance(s, RateSegment) for s in raw):
        return raw
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            "must be a non-empty list of segments",
            path=FIELD,
            value=raw,
            allowed=f"a list of {SEGMENT_SHAPES}",
        )
    return tuple(parse_segment(item, index) for index, item in enumerate(raw))


def profile_to_yaml(segments: Sequence[RateSegment]) -> list[dict[str, float]]:
    """The segments as the YAML spells them (for the config echo in results)."""
    return [
        {"rate" if s.kind == "step" else "rampTo": s.rate, "duration": s.duration_s}
        for s in segments
    ]
