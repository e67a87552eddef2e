"""Who hears about a run while it goes: one list of listeners, told of every phase and interval.

A run has two kinds of events: a phase begins (``setup``, ``warmup``, ``catch-up``,
``measure``, ``drain``, ``teardown``, with its planned length in seconds or ``None`` when it lasts
as long as it takes), and an interval ends (its snapshot and the backlog, in messages, at its
end). The scenario tells :class:`Listeners`, which tells each listener in order; the runner puts
the metrics board first (a scrape shows an interval before anyone reacts to it), then the
pipeline landing and the checkpoint, then the caller's own (the live display, a test's hook).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from loadgen.engine.stats import IntervalStats


class RunListener(Protocol):
    """What a listener implements (both methods; a listener that ignores one does nothing).

    The arguments are positional, so an implementation names them as it likes."""

    def on_phase(self, phase: str, seconds: float | None, /) -> None: ...
    def on_interval(self, stats: IntervalStats, backlog: int, /) -> None: ...


@dataclass(frozen=True)
class OnInterval:
    """A listener made of one interval function (the Python API's ``on_interval=``)."""

    call: Callable[[IntervalStats, int], None]

    def on_phase(self, phase: str, seconds: float | None) -> None:
        """Phases are not this listener's business."""

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        self.call(stats, backlog)


@dataclass(frozen=True)
class Listeners:
    """The listeners of one run, told of each event in order."""

    members: tuple[RunListener, ...] = ()

    def phase(self, phase: str, seconds: float | None = None) -> None:
        for member in self.members:
            member.on_phase(phase, seconds)

    def interval(self, stats: IntervalStats, backlog: int) -> None:
        for member in self.members:
            member.on_interval(stats, backlog)


NO_LISTENERS = Listeners()
