"""Catch-up and mixed runs: OMB's backlog mode, timed phase by phase.

After warm-up the catch-up consumers pause while producers keep their rate, until the catch-up
subscriptions hold ``consumerBacklogSizeGB`` (nominal ``messageSize`` per message, running
totals, as OMB); then they resume, and the drain lasts until the backlog is down to
``max(1000, (1 - backlogDrainRatio) × capacity)`` messages. In a mixed run the first
``tailingSubscriptionsPerTopic`` subscriptions of each topic never pause, so their latency
while another subscription catches up is measured directly.

Unlike OMB, both waits are bounded (OMB waits forever for a drain that never comes, its issue
#334): a build or drain that does not finish in time is reported as such and the run goes on.
Each phase ends with a snapshot, so intervals never straddle two phases and the drain's
publish and end-to-end latencies are exact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from loadgen.outcome import CatchUpOutcome, CatchUpPlan
from loadgen.worker.contract import Worker

log = logging.getLogger("loadgen.run")

CHECK_S = 0.1
"""How often the backlog is read while it builds and drains (OMB: 1 s and 0.1 s)."""


def backlog_of(worker: Worker, plan: CatchUpPlan) -> int:
    """Messages the catch-up subscriptions have yet to read (probe and warm-up included)."""
    sent = worker.sent_so_far()
    return max(0, plan.catch_up_subscriptions * sent - worker.received_catch_up_so_far())


RunUntil = Callable[[Callable[[], bool], float], bool]
"""Keeps measuring until the condition holds or the seconds pass; True if it held."""


def build_and_drain(
    worker: Worker,
    outcome: CatchUpOutcome,
    run_until: RunUntil,
    boundary_ms: Callable[[], int],
    timeout_s: float,
) -> None:
    """Pause the catch-up consumers, build the backlog, resume them and time the drain.

    ``boundary_ms`` is the end of the interval last measured: ``run_until`` ends each phase
    with a snapshot, so phases begin and end on interval boundaries. ``outcome`` is filled in
    as the phases pass, so a run cut short still reports the phases it went through.
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
    outcome.drained = run_until(lambda: backlog_of(worker, plan) <= plan.drained_below, timeout_s)
    outcome.drain_ended_ms = boundary_ms()
    if outcome.drained:
        log.info("the backlog drained in %.1f s", outcome.drain_seconds)
    else:
        log.warning(
            "the backlog did not drain below %d messages within %.0f s",
            plan.drained_below,
            timeout_s,
        )
