"""Open-loop pacing on an absolute schedule: message i is intended at ``start + i × interval``.

Never "sleep 1/rate": when the sender falls behind, intended times lie in the past, messages go
out back to back, and the lag is recorded as publish delay (OMB's UniformRateLimiter, PR #248).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Schedule:
    """The intended send times of one worker's messages, in monotonic nanoseconds."""

    start_ns: int
    rate: float

    def __post_init__(self) -> None:
        if not self.rate > 0 or self.rate == float("inf"):
            raise ValueError(f"rate must be a finite positive number, got {self.rate!r}")

    @property
    def interval_ns(self) -> float:
        return 1e9 / self.rate

    def intended_ns(self, index: int) -> int:
        return self.start_ns + int(index * self.interval_ns)

    def continued(self, index: int, now_ns: int, rate: float, *, keep_lag: bool) -> Schedule:
        """A schedule at ``rate`` on which message ``index`` is intended at ``now_ns``.

        With ``keep_lag`` a sender that is behind stays behind (message ``index`` keeps its
        intended time), so a rate profile never hides lag; without it the lag is forgotten,
        as OMB's fresh UniformRateLimiter on each rate adjustment does.
        """
        at = min(self.intended_ns(index), now_ns) if keep_lag else now_ns
        return Schedule(at - round(index * 1e9 / rate), rate)

    def due(self, now_ns: int) -> int:
        """How many messages (indices 0..n-1) are due at ``now_ns``."""
        if now_ns < self.start_ns:
            return 0
        return int((now_ns - self.start_ns) / self.interval_ns) + 1
