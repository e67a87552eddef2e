"""``consumerDelay``: how long a consumer "processes" each message (PerfTest's
``--consumer-latency``), fixed or drawn from a distribution.

Written as a duration (``2ms``: fixed) or one of ``{fixed: 2ms}``, ``{uniform: {min: 1ms, max:
5ms}}``, ``{exponential: {mean: 2ms}}``. The worker turns it into a pool of delays
(:func:`delay_pool`) built before the load starts, so a consumer's callback only takes the next
one and sleeps: no random call per message.
"""

from __future__ import annotations

import math
import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from loadgen.base.errors import ConfigError
from loadgen.spec.durations import parse_duration

KINDS = ("fixed", "uniform", "exponential")
ALLOWED = (
    "a duration (2ms), {fixed: 2ms}, {uniform: {min: 1ms, max: 5ms}} or {exponential: {mean: 2ms}}"
)
MAX_DELAY_S = 60.0
"""Longer than any broker's session or heartbeat timeout: a consumer asleep this long is dead."""
POOL_SIZE = 1024
"""Delays in a drawn pool: enough that cycling through it shows the distribution's shape."""
SEED = 31
"""Pools are drawn from a seeded generator, so two runs of one workload delay alike."""


def _seconds(value: Any, path: str) -> float:
    seconds = parse_duration(value, option=path) if isinstance(value, str) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ConfigError("expected a duration", path=path, value=value, allowed=ALLOWED)
    if not 0 <= seconds <= MAX_DELAY_S:
        raise ConfigError(
            "a consumer delay must be between 0 and 60 s",
            path=path,
            value=value,
            allowed=f"0 .. {MAX_DELAY_S:g}s",
        )
    return float(seconds)


def _text(seconds: float) -> str:
    return f"{seconds * 1000:g}ms"


class ConsumerDelay(BaseModel):
    """One delay distribution, in seconds; plain numbers in YAML are seconds too."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["fixed", "uniform", "exponential"]
    """How the delays are drawn: ``fixed``, ``uniform`` or ``exponential``."""
    low_s: float = Field(ge=0)
    """The fixed delay, the uniform minimum, or the exponential mean."""
    high_s: float = Field(ge=0)
    """The uniform maximum (equal to ``low_s`` for the other kinds)."""

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, value: Any) -> Any:
        if isinstance(value, dict) and "kind" in value:
            return value  # already the model's own fields
        path = "consumerDelay"
        if not isinstance(value, dict):
            seconds = _seconds(value, path)
            return {"kind": "fixed", "low_s": seconds, "high_s": seconds}
        if len(value) != 1 or next(iter(value)) not in KINDS:
            raise ConfigError(
                "consumerDelay names one kind of delay", path=path, value=value, allowed=ALLOWED
            )
        kind, body = next(iter(value.items()))
        path = f"{path}.{kind}"
        if kind == "fixed":
            seconds = _seconds(body, path)
            return {"kind": kind, "low_s": seconds, "high_s": seconds}
        keys = ("min", "max") if kind == "uniform" else ("mean",)
        if not isinstance(body, dict) or sorted(body) != sorted(keys):
            raise ConfigError(
                f"{kind} takes exactly {', '.join(keys)}", path=path, value=body, allowed=ALLOWED
            )
        low = _seconds(body[keys[0]], f"{path}.{keys[0]}")
        high = _seconds(body[keys[-1]], f"{path}.{keys[-1]}")
        if low > high:
            raise ConfigError(
                "uniform min is above max", path=f"{path}.min", value=body["min"], allowed="<= max"
            )
        return {"kind": kind, "low_s": low, "high_s": high}

    @model_serializer
    def _as_yaml(self) -> Any:
        if self.kind == "fixed":
            return _text(self.low_s)
        if self.kind == "uniform":
            return {"uniform": {"min": _text(self.low_s), "max": _text(self.high_s)}}
        return {"exponential": {"mean": _text(self.low_s)}}

    def describe(self) -> str:
        """One phrase for the console and the report: ``uniform 1ms..5ms``."""
        if self.kind == "fixed":
            return f"fixed {_text(self.low_s)}"
        if self.kind == "uniform":
            return f"uniform {_text(self.low_s)}..{_text(self.high_s)}"
        return f"exponential, mean {_text(self.low_s)}"


def delay_pool(delay: ConsumerDelay) -> list[float]:
    """Delays (seconds) a consumer cycles through: the distribution's quantiles at evenly
    spaced probabilities, shuffled with a fixed seed (a stratified sample: its mean and spread
    match the distribution's far better than as many random draws). None at all for a delay of
    zero: the consumers then run without the sleeping wrapper."""
    if delay.high_s == 0:
        return []
    if delay.kind == "fixed":
        return [delay.low_s]
    quantiles = [(i + 0.5) / POOL_SIZE for i in range(POOL_SIZE)]
    if delay.kind == "uniform":
        pool = [delay.low_s + q * (delay.high_s - delay.low_s) for q in quantiles]
    else:
        pool = [min(-delay.low_s * math.log1p(-q), MAX_DELAY_S) for q in quantiles]
    random.Random(SEED).shuffle(pool)
    return pool
