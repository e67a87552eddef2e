"""``consumerChanges``: consumers that join or leave every subscription during the measured
phase, to measure a group's rebalance under load (loadgen's extension; OMB has nothing like it)::

    consumerChanges:
      - {at: 20s, join: 1}    # 20 s into the measured phase, one more consumer per subscription
      - {at: 40s, leave: 2}   # then two fewer (the latest to join leave first)

``at`` is seconds or a duration text (``30s``, ``1m30s``) into the measured phase; each change
either joins or leaves, and every subscription keeps at least one consumer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loadgen.base.errors import ConfigError
from loadgen.spec.durations import parse_duration

FIELD = "consumerChanges"


class ConsumerChange(BaseModel):
    """One change: ``join`` consumers added to, or ``leave`` consumers closed in, every
    subscription, ``at`` seconds into the measured phase."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    at_s: float = Field(alias="at", gt=0)
    """Seconds into the measured phase (or a duration text: ``20s``, ``1m``)."""
    join: int = Field(default=0, ge=0)
    """Consumers added to every subscription."""
    leave: int = Field(default=0, ge=0)
    """Consumers closed in every subscription, the latest to join first."""

    @field_validator("at_s", mode="before")
    @classmethod
    def _duration_text(cls, value: Any) -> Any:
        """A ValueError, not the parser's ConfigError, so the error names the list item."""
        if not isinstance(value, str):
            return value
        try:
            return parse_duration(value, option="at")
        except ConfigError as error:
            raise ValueError(f"{error.args[0]} (e.g. 30s, 1m30s, or seconds)") from None

    @model_validator(mode="after")
    def _one_way(self) -> ConsumerChange:
        if (self.join > 0) == (self.leave > 0):
            raise ValueError("a change either joins or leaves: join: N or leave: N (N >= 1)")
        if not math.isfinite(self.at_s):
            raise ValueError(f"at must be a finite time, not {self.at_s}")
        return self


def check_changes(changes: Sequence[ConsumerChange], consumers_per_subscription: int) -> None:
    """Every subscription keeps at least one consumer through the changes, in time order."""
    count = consumers_per_subscription
    for index, change in sorted(enumerate(changes), key=lambda item: item[1].at_s):
        if count + change.join - change.leave < 1:
            raise ConfigError(
                f"{count} consumer(s) per subscription by then: each keeps at least one",
                path=f"{FIELD}.{index}.leave",
                value=change.leave,
                allowed=f"at most {count - 1}",
            )
        count += change.join - change.leave


def check_within(changes: Sequence[ConsumerChange], measured_s: float) -> None:
    """Every change falls inside the measured phase of ``measured_s`` seconds."""
    for index, change in enumerate(changes):
        if change.at_s >= measured_s:
            raise ConfigError(
                f"this change comes after the measured phase ends ({measured_s:g} s)",
                path=f"{FIELD}.{index}.at",
                value=change.at_s,
                allowed=f"below {measured_s:g} s",
            )
