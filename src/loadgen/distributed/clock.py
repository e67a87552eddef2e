"""How far a worker's wall clock is from the coordinator's: NTP's four-timestamp estimate.

The coordinator notes ``t0`` before a request and ``t3`` when the answer arrives; the worker
notes ``t1`` when the request arrived and ``t2`` when it answered. If the path is symmetric the
worker's clock is ``((t1 - t0) + (t2 - t3)) / 2`` ahead, and whatever the path, the true offset
lies within half the round trip ``(t3 - t0) - (t2 - t1)`` of that. The sample with the shortest
round trip gives the tightest bound, so several are taken and the best one kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Sample = tuple[int, int, int, int]
"""``(t0, t1, t2, t3)`` in epoch nanoseconds: sent, received, answered, answer received."""


@dataclass(frozen=True)
class ClockOffset:
    offset_ns: int
    """Worker clock minus coordinator clock."""
    round_trip_ns: int
    """The network time of the sample; the offset is exact to within half of it."""

    @property
    def bound_ns(self) -> int:
        return self.round_trip_ns // 2


def best_offset(samples: Iterable[Sample]) -> ClockOffset:
    """The estimate from the sample with the shortest round trip."""
    estimates = [
        ClockOffset(((t1 - t0) + (t2 - t3)) // 2, max(0, (t3 - t0) - (t2 - t1)))
        for t0, t1, t2, t3 in samples
    ]
    if not estimates:
        raise ValueError("best_offset needs at least one sample")
    return min(estimates, key=lambda estimate: estimate.round_trip_ns)


@dataclass(frozen=True)
class PairShift:
    """How far one producer/consumer worker pair's end-to-end latencies are off."""

    producer: str
    consumer: str
    shift_ns: int
    """``offset(consumer) - offset(producer)``: what the two clocks add to each latency."""
    bound_ns: int
    """How far ``shift_ns`` may be from the truth: the sum of the two estimates' bounds."""


def pair_shifts(
    offsets: Mapping[str, ClockOffset], pairs: Iterable[tuple[str, str]]
) -> list[PairShift]:
    """The shift of every ``(producer worker, consumer worker)`` pair of two workers (a worker
    paired with itself reads one clock: no shift)."""
    return [
        PairShift(
            producer,
            consumer,
            offsets[consumer].offset_ns - offsets[producer].offset_ns,
            offsets[producer].bound_ns + offsets[consumer].bound_ns,
        )
        for producer, consumer in pairs
        if producer != consumer
    ]


def e2e_skew_bound_ns(shifts: Iterable[PairShift], *, corrected: bool) -> int:
    """How far end-to-end latency can be off because producer and consumer clocks differ.

    ``shifts`` are those of the worker pairs that share a topic. A message sent on P and
    received on C measures its latency plus the pair's shift, known to within its bound; once
    corrected by the shift only the bound remains. The worst pair decides, 0 when every pair is
    one worker.
    """
    return max(
        ((0 if corrected else abs(s.shift_ns)) + s.bound_ns for s in shifts),
        default=0,
    )
