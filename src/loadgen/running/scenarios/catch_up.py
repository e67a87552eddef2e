"""Catch-up and mixed runs: OMB's backlog mode, timed phase by phase.

After warm-up the catch-up consumers pause while producers keep their rate, until the catch-up
subscriptions hold ``consumerBacklogSizeGB`` (nominal ``messageSize`` per message, running
totals, as OMB); then they resume, and the drain lasts until the backlog is down to
``max(1000, (1 - backlogDrainRatio) × capacity)`` messages. In a mixed run the first
``tailingSubscriptionsPerTopic`` subscriptions of each topic never pause, so their latency
while another subscription catches up is measured directly.

Unlike OMB, both waits are bounded (OMB waits forever for a drain that never comes, its issue
#334). A build that does not reach its target in time is drained as far as it got. A drain
ends early when it cannot come (:class:`DrainWatch`: the backlog did not shrink over a window),
or at its timeout; either way the drain verdict says why, with the rates that decided it, and
the run ends there (its steady phase would measure a backlog, not a tailing read). Each phase
ends with a snapshot, so intervals never straddle two phases and the drain's publish and
end-to-end latencies are exact.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from loadgen.engine.contract import Worker
from loadgen.engine.outcome import CatchUpOutcome, CatchUpPlan, DrainVerdict
from loadgen.running.request import RunOptions
from loadgen.spec import Workload

log = logging.getLogger("loadgen.run")

CHECK_S = 0.1
"""How often the backlog is read while it builds and drains (OMB: 1 s and 0.1 s)."""


def backlog_of(worker: Worker, plan: CatchUpPlan) -> int:
    """Messages the catch-up subscriptions have yet to read (probe and warm-up included)."""
    return sample_of(worker, plan).backlog


STALL_INTERVALS = 3
"""A drain whose backlog has not shrunk over this many stats intervals cannot come: three
console lines in a row without progress, so what ends the drain is what the user saw."""
MIN_STALL_WINDOW_S = 5.0
"""The window's floor, for 1-s intervals: consumers resuming (a Kafka fetch, Pulsar's flow
permits) or a broker's pause of a second or two must not end a drain that is about to go."""


def stall_window_s(stats_interval_s: float) -> float:
    return max(STALL_INTERVALS * stats_interval_s, MIN_STALL_WINDOW_S)


def backlog_drain_timeout_s(options: RunOptions, workload: Workload) -> float:
    """The flag, else the workload's ``backlogDrainTimeout``, else the catch-up timeout; 0 is
    forever."""
    given = (options.backlog_drain_timeout_s, workload.backlog_drain_timeout_s)
    return next((s for s in given if s is not None), options.catch_up_timeout_s)


@dataclass(frozen=True)
class DrainSample:
    """The catch-up subscriptions' counters at one moment (monotonic seconds)."""

    at: float
    fed: int
    """Messages sent × catch-up subscriptions per topic: what the backlog was fed."""
    read: int
    """Messages the catch-up subscriptions read."""

    @property
    def backlog(self) -> int:
        return max(0, self.fed - self.read)


class DrainWatch:
    """Keeps the drain's last window of samples; a drain has stalled when its backlog now is
    no lower than a window ago. A drain that shrinks, however slowly, is left to the timeout."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.samples: deque[DrainSample] = deque()

    def observe(self, sample: DrainSample) -> bool:
        """Add ``sample``; True when the drain has stalled."""
        samples = self.samples
        samples.append(sample)
        while len(samples) > 1 and samples[1].at <= sample.at - self.window_s:
            samples.popleft()
        oldest = samples[0]
        return sample.at - oldest.at >= self.window_s and sample.backlog >= oldest.backlog

    def rates(self) -> tuple[float, float]:
        """(read, fed) msg/s over the samples kept: the consumers' and the backlog's feed."""
        first, last = self.samples[0], self.samples[-1]
        seconds = last.at - first.at
        if seconds <= 0:
            return 0.0, 0.0
        return (last.read - first.read) / seconds, (last.fed - first.fed) / seconds


def sample_of(worker: Worker, plan: CatchUpPlan) -> DrainSample:
    fed = plan.catch_up_subscriptions * worker.sent_so_far()
    return DrainSample(time.monotonic(), fed, worker.received_catch_up_so_far())


RunUntil = Callable[[Callable[[], bool], float], bool]
"""Keeps measuring until the condition holds or the seconds pass; True if it held."""


def build_and_drain(
    worker: Worker,
    outcome: CatchUpOutcome,
    run_until: RunUntil,
    boundary_ms: Callable[[], int],
    timeout_s: float,
    drain_timeout_s: float,
    window_s: float,
) -> None:
    """Pause the catch-up consumers, build the backlog, resume them and time the drain.

    ``boundary_ms`` is the end of the interval last measured: ``run_until`` ends each phase
    with a snapshot, so phases begin and end on interval boundaries. ``outcome`` is filled in
    as the phases pass, so a run cut short still reports the phases it went through.
    ``drain_timeout_s`` 0 waits for the drain as long as it takes, stalled or not (OMB).
    """
    plan = outcome.plan
    outcome.build_started_ms = boundary_ms()
    worker.pause_catch_up(True)
    outcome.target_reached = run_until(
        lambda: backlog_of(worker, plan) >= plan.target_messages, timeout_s
    )
    outcome.build_ended_ms = boundary_ms()
    outcome.backlog_messages = backlog_of(worker, plan)
    worker.pause_catch_up(False)
    if not outcome.target_reached:
        log.warning(
            "the backlog reached %d of %d messages within %.0f s; draining what there is",
            outcome.backlog_messages,
            plan.target_messages,
            timeout_s,
        )
    _drain(worker, outcome, run_until, boundary_ms, drain_timeout_s, window_s)


def _drain(
    worker: Worker,
    outcome: CatchUpOutcome,
    run_until: RunUntil,
    boundary_ms: Callable[[], int],
    timeout_s: float,
    window_s: float,
) -> None:
    plan = outcome.plan
    watch = DrainWatch(window_s)
    stalled = False

    def over() -> bool:
        nonlocal stalled
        sample = sample_of(worker, plan)
        if sample.backlog <= plan.drained_below:
            return True
        stalled = watch.observe(sample) and timeout_s > 0
        return stalled

    reached = run_until(over, timeout_s if timeout_s > 0 else float("inf"))
    outcome.drain_ended_ms = boundary_ms()
    outcome.drained = reached and not stalled
    read_rate, fed_rate = watch.rates() if watch.samples else (0.0, 0.0)
    outcome.drain = DrainVerdict(
        completed=outcome.drained,
        reason="drained" if outcome.drained else ("stalled" if stalled else "timeout"),
        backlog_at_start=outcome.backlog_messages,
        backlog_at_end=backlog_of(worker, plan),
        consume_rate=read_rate,
        publish_rate=fed_rate / plan.catch_up_subscriptions,
        window_seconds=window_s,
        timeout_seconds=timeout_s,
    )
    if outcome.drained:
        log.info("the backlog drained in %.1f s", outcome.drain_seconds)
    else:
        log.warning("drain stopped: %s", outcome.drain.describe(plan.catch_up_subscriptions))
