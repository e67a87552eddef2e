"""Outages: stretches of a run in which the broker stopped acknowledging or delivering.

Interval statistics show an outage only as a dip in a 10-s rate; a benchmark run against a
broker that restarts or stalls needs the window itself. The run's stats loop already wakes
every 0.25 s, so it hands this watch the running counters (:class:`~loadgen.engine.local_worker.
Progress`) each time: an outage is ``threshold_s`` or more without a new acknowledgement while
producers run (``publish``), or without a new delivery while sent messages are still unreceived
(``consume``). It starts at the last progress seen and ends at the first progress after it, to
the resolution of the sampling. Nothing here runs per message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from loadgen.engine.local_worker import Progress
from loadgen.engine.outcome import WHAT_STOPPED

log = logging.getLogger("loadgen.run")

MIN_THRESHOLD_S = 1.0
EXPECTED_MESSAGES = 20
"""At a low rate the gap must be long enough to have held this many messages."""


def threshold_for(rate: float) -> float:
    """Seconds without progress that make an outage: 1 s, or 20 messages' time at ``rate``."""
    return max(MIN_THRESHOLD_S, EXPECTED_MESSAGES / rate) if rate > 0 else MIN_THRESHOLD_S


@dataclass
class Outage:
    role: str
    """``publish``: no acknowledgement; ``consume``: nothing received with messages due."""
    start_ms: int
    end_ms: int | None = None
    """The first progress after it; ``None`` if the run ended before the broker came back."""
    errors_at_start: int = 0
    errors: int = 0
    """Publish errors counted during it (a failed send is not an acknowledgement)."""

    def to_json(self, run_end_ms: int) -> dict[str, Any]:
        end = self.end_ms if self.end_ms is not None else run_end_ms
        return {
            "role": self.role,
            "startMs": self.start_ms,
            "endMs": self.end_ms,
            "seconds": round((end - self.start_ms) / 1000, 3),
            "recovered": self.end_ms is not None,
            "publishErrors": self.errors,
        }


@dataclass
class _Track:
    """One counter's last change and the outage it is in, if any."""

    value: int = 0
    since_ms: int = 0
    errors: int = 0
    """The publish errors counted when it last changed."""
    open: Outage | None = None


class OutageWatch:
    def __init__(self, threshold_s: float, subscriptions: int, start_ms: int) -> None:
        self.threshold_ms = threshold_s * 1000
        self.subscriptions = subscriptions
        self.outages: list[Outage] = []
        self._tracks = {role: _Track(since_ms=start_ms) for role in WHAT_STOPPED}

    def observe(
        self, now_ms: int, progress: Progress, *, consuming: bool = True, publishing: bool = True
    ) -> None:
        """Feed one reading; ``consuming`` is False while consumers are paused on purpose,
        ``publishing`` once producers stopped with every message acknowledged."""
        self._step("publish", progress.acked, now_ms, progress.errors, watching=publishing)
        due = progress.acked * self.subscriptions > progress.received
        self._step("consume", progress.received, now_ms, progress.errors, consuming and due)

    def _step(self, role: str, value: int, now_ms: int, errors: int, watching: bool) -> None:
        track = self._tracks[role]
        if value != track.value:
            if track.open is not None:
                self._ended(track.open, now_ms, errors)
                track.open = None
            track.value, track.since_ms, track.errors = value, now_ms, errors
        elif not watching:  # a pause is not an outage: count from its end
            track.since_ms, track.errors = now_ms, errors
        elif track.open is None and now_ms - track.since_ms >= self.threshold_ms:
            track.open = Outage(role, track.since_ms, errors_at_start=track.errors)
            self.outages.append(track.open)
            log.warning(
                "no %s for %.1f s (%s errors so far)",
                WHAT_STOPPED[role],
                (now_ms - track.since_ms) / 1000,
                f"{errors:,}",
            )
        elif track.open is not None:
            track.open.errors = errors - track.open.errors_at_start

    def _ended(self, outage: Outage, now_ms: int, errors: int) -> None:
        outage.end_ms = now_ms
        outage.errors = errors - outage.errors_at_start
        log.warning(
            "%s resumed after a %.1f s outage (%s publish errors in it)",
            WHAT_STOPPED[outage.role],
            (now_ms - outage.start_ms) / 1000,
            f"{outage.errors:,}",
        )

    def silent(self) -> bool:
        """Whether acknowledgements had stopped when last observed: the broker is not answering."""
        return self._tracks["publish"].open is not None

    def report(self, run_end_ms: int) -> list[dict[str, Any]]:
        return [outage.to_json(run_end_ms) for outage in self.outages]
