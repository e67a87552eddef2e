"""Items due at given seconds into the measured phase: the timetable behind the workload's
consumer changes and faults (phase controls, :mod:`.rate_control`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Protocol, TypeVar


class Timed(Protocol):
    @property
    def at_s(self) -> float: ...


Item = TypeVar("Item", bound=Timed)


class Timetable(Generic[Item]):
    """``items`` in ``at_s`` order, handed out once the measured phase has run that long."""

    def __init__(self, items: Sequence[Item]) -> None:
        self._pending = sorted(items, key=lambda item: item.at_s)
        self._measure_started: float | None = None

    def begin(self, phase: str, now: float) -> None:
        """The clock starts with the measured phase (monotonic ``now``)."""
        if phase == "measure":
            self._measure_started = now

    def due(self, now: float) -> list[Item]:
        """The items whose time has come since the last call."""
        started = self._measure_started
        if started is None:
            return []
        count = sum(1 for item in self._pending if now - started >= item.at_s)
        taken, self._pending = self._pending[:count], self._pending[count:]
        return taken
