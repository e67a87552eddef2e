"""Who changes the rate of a running load: OMB's rate discovery, or a workload's rate profile.

The scenario calls :meth:`RateControl.begin` as each phase starts and :meth:`RateControl.poll`
on every short wait of its measurement loop (every 0.25 s); the control decides when to call
``worker.adjust_rate``. Each change is kept, so the result shows the rate over time
(``rateDiscovery`` / ``rateProfile``).

- **Discovery** (``producerRate: 0`` or -1): OMB's backlog-driven controller
  (:mod:`loadgen.engine.rate_controller`) every 3 s, from the start of load through warm-up and the
  measured phase, starting at 10 000 msg/s. Each change forgets the sender's lag (OMB's fresh
  rate limiter). Two deliberate differences from OMB: the received total is divided by
  ``subscriptionsPerTopic`` (OMB compares it raw with the sent total, which is only right for
  one subscription) and a producer-only workload has no receive backlog (OMB's would always
  ramp down); the rate never drops below 1 msg/s (OMB's could reach 0 and stay there).
- **Profile** (``producerRateProfile``): warm-up runs at the profile's start rate; the measured
  phase follows the segments from its first second, and holds the last rate if it outlasts
  them. A ramp moves in :data:`RAMP_STEP_S` steps, each at the ramp's mean rate over that step,
  so it sends as many messages as the linear ramp. Changes keep the sender's lag, so an overload
  during the profile still shows in the latency from intended send time.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any, Protocol

from loadgen.engine.contract import Worker
from loadgen.engine.local_worker import MIN_RATE
from loadgen.engine.rate_controller import INITIAL_RATE, PERIOD_S, RateController
from loadgen.spec import Workload
from loadgen.spec.rate_profile import RateSegment, profile_to_yaml

log = logging.getLogger("loadgen.run")

RAMP_STEP_S = 1.0
"""How often a ramp changes the rate."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class PhaseControl(Protocol):
    """What changes a running load: told of each phase, polled on every short wait."""

    def begin(self, phase: str, now: float, seconds: float) -> None:
        """A phase (``warmup``, ``measure``) of ``seconds`` starts at monotonic ``now``."""

    def poll(self, worker: Worker, now: float) -> None:
        """Change the load if it is time to."""

    def report(self) -> dict[str, Any]:
        """The result fields this control adds (one key)."""

    def settle(self) -> None:
        """The measured phase is over (or the run ends early): undo what must not outlast it."""


class RateControl(PhaseControl, Protocol):
    start_rate: float
    """The rate the load starts at."""


class _History:
    """The rate changes so far: ``[{timeMs, phase, rate, ...}]``."""

    def __init__(self) -> None:
        self.changes: list[dict[str, Any]] = []
        self.phase = "warmup"

    def add(self, rate: float, **extra: Any) -> None:
        self.changes.append({"timeMs": _now_ms(), "phase": self.phase, "rate": rate, **extra})


class Discovery:
    """OMB's max-sustainable-rate search, driven by the worker's running totals."""

    def __init__(
        self,
        subscriptions: int,
        *,
        period_s: float = PERIOD_S,
        initial_rate: float = INITIAL_RATE,
        controller: RateController | None = None,
    ) -> None:
        self.start_rate = initial_rate
        self.rate = initial_rate
        self._subscriptions = subscriptions
        self._period_s = period_s
        self._controller = controller or RateController()
        self._history = _History()
        self._period_start: float | None = None

    def begin(self, phase: str, now: float, seconds: float) -> None:
        self._history.phase = phase
        if self._period_start is None:  # the load started: the first period begins
            self._period_start = now
            self._history.add(self.rate, reason="initial")

    def poll(self, worker: Worker, now: float) -> None:
        if self._period_start is None or now - self._period_start < self._period_s:
            return
        period_ns = int((now - self._period_start) * 1e9)
        self._period_start = now
        sent = worker.sent_so_far()
        received = worker.received_so_far()
        # received per subscription, comparable with sent; producer-only: nothing to wait for
        delivered = received // self._subscriptions if self._subscriptions else sent
        decision = self._controller.next_rate(self.rate, period_ns, sent, delivered)
        self.rate = max(decision.rate, MIN_RATE)
        worker.adjust_rate(self.rate, keep_lag=False)
        self._history.add(self.rate, reason=decision.reason)
        log.info("rate discovery: %s -> %.0f msg/s", decision.reason, self.rate)

    def settle(self) -> None:
        """Nothing outlasts the run."""

    def report(self) -> dict[str, Any]:
        return {
            "rateDiscovery": {
                "initialRate": self.start_rate,
                "finalRate": self.rate,
                "periodSeconds": self._period_s,
                "history": self._history.changes,
            }
        }


def profile_rate(
    segments: Sequence[RateSegment], origin: float, elapsed_s: float, step_s: float = RAMP_STEP_S
) -> float:
    """The rate ``elapsed_s`` into the profile; ramps move from the rate before them
    (``origin`` before the first segment) in ``step_s`` steps at the ramp's mean over each."""
    previous = origin
    for segment in segments:
        if elapsed_s < segment.duration_s:
            if segment.kind == "step":
                return segment.rate
            step_start = math.floor(elapsed_s / step_s) * step_s
            middle = (step_start + min(step_start + step_s, segment.duration_s)) / 2
            return previous + (segment.rate - previous) * middle / segment.duration_s
        elapsed_s -= segment.duration_s
        previous = segment.rate
    return previous


class Profile:
    """Follows ``producerRateProfile`` (``origin``: ``producerRate``, where an opening ramp
    starts) through the measured phase."""

    def __init__(
        self,
        segments: Sequence[RateSegment],
        start_rate: float,
        origin: float,
        *,
        step_s: float = RAMP_STEP_S,
    ) -> None:
        self._segments = segments
        self.start_rate = start_rate
        self._origin = origin
        self._step_s = step_s
        self.rate = self.start_rate
        self._history = _History()
        self._history.add(self.rate)
        self._measure_start: float | None = None

    def begin(self, phase: str, now: float, seconds: float) -> None:
        self._history.phase = phase
        if phase != "measure":
            return
        self._measure_start = now
        length = sum(segment.duration_s for segment in self._segments)
        if seconds < length:
            log.warning(
                "the measured phase (%.0f s) ends before the rate profile (%.0f s)",
                seconds,
                length,
            )

    def poll(self, worker: Worker, now: float) -> None:
        if self._measure_start is None:
            return
        rate = profile_rate(self._segments, self._origin, now - self._measure_start, self._step_s)
        if rate != self.rate:
            self.rate = rate
            worker.adjust_rate(rate, keep_lag=True)
            self._history.add(rate)

    def settle(self) -> None:
        """Nothing outlasts the run."""

    def report(self) -> dict[str, Any]:
        return {
            "rateProfile": {
                "segments": profile_to_yaml(self._segments),
                "rampStepSeconds": self._step_s,
                "history": self._history.changes,
            }
        }


def rate_control_for(workload: Workload) -> RateControl | None:
    """The control a workload asks for; None for a fixed ``producerRate`` or no producers."""
    if workload.producers_per_topic == 0:
        return None
    if workload.producer_rate_profile is not None:
        return Profile(workload.producer_rate_profile, workload.start_rate, workload.producer_rate)
    if workload.is_rate_discovery:
        return Discovery(workload.subscriptions_per_topic)
    return None
