"""Message-size distributions (loadgen's additions to OMB's one ``messageSize``).

``messageSizes`` is a weighted list of sizes, ``messageSizeRange`` a uniform range; at most one
of them. OMB readers of a result still find ``messageSize``: with a distribution it is the
distribution's mean, rounded (what OMB's backlog byte math needs).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loadgen.base.errors import ConfigError

MAX_MESSAGE_SIZE = 1 << 30
"""No broker loadgen drives takes larger messages (RabbitMQ's hard cap is 512 MiB), and a
payload pool this size already costs gigabytes of memory."""
MAX_TOTAL_WEIGHT = 1_000_000
"""The pool holds every size ``weight`` times (at least): a bound keeps it a list, not a heap."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SizeWeight(_Strict):
    """One entry of ``messageSizes``: ``size`` bytes, ``weight`` times in ``sum(weights)``."""

    size: int = Field(ge=1, le=MAX_MESSAGE_SIZE)
    """A message size, in bytes."""
    weight: int = Field(default=1, ge=1, le=MAX_TOTAL_WEIGHT)
    """How often ``size`` is sent relative to the other entries' weights (all 1, the default:
    equally often)."""


class SizeRange(_Strict):
    """``messageSizeRange``: every size from ``min`` to ``max`` bytes equally likely."""

    min: int = Field(ge=1, le=MAX_MESSAGE_SIZE)
    """The smallest message size, in bytes (included)."""
    max: int = Field(ge=1, le=MAX_MESSAGE_SIZE)
    """The largest message size, in bytes (included); not below ``min``."""

    @model_validator(mode="after")
    def _ordered(self) -> SizeRange:
        if self.min > self.max:
            raise ConfigError(
                "messageSizeRange min is above max",
                path="messageSizeRange.min",
                value=self.min,
                allowed=f"<= max ({self.max})",
            )
        return self


def mean_size(sizes: tuple[SizeWeight, ...] | None, span: SizeRange | None) -> float:
    """The distribution's mean size in bytes (weighted, or the range's middle)."""
    if sizes:
        return sum(s.size * s.weight for s in sizes) / sum(s.weight for s in sizes)
    if span is not None:
        return (span.min + span.max) / 2
    raise ValueError("no size distribution")


def raw_mean(data: dict[str, Any]) -> int | None:
    """The rounded mean of the distribution a raw workload mapping gives, if it gives a valid
    one (for filling in ``messageSize`` before field validation; a bad distribution is
    reported by its own field's validation, not here)."""
    sizes = data.get("messageSizes", data.get("message_sizes"))
    span = data.get("messageSizeRange", data.get("message_size_range"))
    try:
        if (sizes is None) == (span is None):
            return None
        weighted = None if sizes is None else tuple(SizeWeight.model_validate(s) for s in sizes)
        ranged = None if span is None else SizeRange.model_validate(span)
        return round(mean_size(weighted, ranged))
    except (ValueError, TypeError, ConfigError):
        return None


def check_distribution(
    sizes: tuple[SizeWeight, ...] | None,
    span: SizeRange | None,
    message_size: int,
    payload_file: str | None,
) -> None:
    """Cross-field rules: one distribution at most, no payload file with one (a file is one
    size), a total weight the pool can hold, and ``messageSize`` equal to the mean."""
    if sizes is not None and span is not None:
        raise ConfigError(
            "messageSizes and messageSizeRange exclude each other",
            path="messageSizeRange",
            value=f"{span.min}..{span.max}",
            allowed="either messageSizes or messageSizeRange",
        )
    if sizes is None and span is None:
        return
    field = "messageSizes" if sizes is not None else "messageSizeRange"
    if payload_file:
        raise ConfigError(
            f"a payloadFile has one size; it cannot be sent with {field}",
            path="payloadFile",
            value=payload_file,
            allowed=f"no payloadFile with {field}",
        )
    if sizes is not None:
        if not sizes:
            raise ConfigError(
                "messageSizes is empty", path="messageSizes", value=[], allowed="one entry or more"
            )
        total = sum(s.weight for s in sizes)
        if total > MAX_TOTAL_WEIGHT:
            raise ConfigError(
                "the weights of messageSizes add up to too much",
                path="messageSizes",
                value=total,
                allowed=f"a total weight <= {MAX_TOTAL_WEIGHT:,}",
            )
    mean = round(mean_size(sizes, span))
    if message_size != mean:
        raise ConfigError(
            f"messageSize must be the mean of {field} ({mean}) or be left out",
            path="messageSize",
            value=message_size,
            allowed=f"{mean}, or no messageSize",
        )
