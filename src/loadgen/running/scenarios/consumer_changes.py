"""Consumers joining and leaving during the measured phase (the workload's ``consumerChanges``).

A phase control like the rate controls (:mod:`.rate_control`): the measurement loop calls
:meth:`ConsumerChanges.poll` on every short wait (every 0.25 s at most), which makes each due
change on the worker, on that thread. Each change is kept with when it was made and how long
the worker took, so the result shows where to look in the intervals: a group's rebalance pause
is the end-to-end latency of the intervals after it (1-s intervals show it best).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from loadgen.engine.contract import Worker
from loadgen.running.scenarios.timetable import Timetable
from loadgen.spec import Workload
from loadgen.spec.consumer_changes import ConsumerChange

log = logging.getLogger("loadgen.run")


class ConsumerChanges:
    """Makes the workload's consumer changes when they are due."""

    def __init__(self, changes: Sequence[ConsumerChange], per_subscription: int) -> None:
        self._timetable = Timetable(changes)
        self._per_subscription = per_subscription
        self._made: list[dict[str, Any]] = []

    def begin(self, phase: str, now: float, seconds: float) -> None:
        self._timetable.begin(phase, now)

    def poll(self, worker: Worker, now: float) -> None:
        for change in self._timetable.due(now):
            self._make(worker, change)

    def _make(self, worker: Worker, change: ConsumerChange) -> None:
        time_ms = time.time_ns() // 1_000_000
        began = time.monotonic()
        worker.change_consumers(join=change.join, leave=change.leave)
        self._per_subscription += change.join - change.leave
        record = {
            "atSeconds": change.at_s,
            "join": change.join,
            "leave": change.leave,
            "timeMs": time_ms,
            "seconds": time.monotonic() - began,
            "consumersPerSubscription": self._per_subscription,
        }
        self._made.append(record)
        log.warning(
            "consumers: %s %d per subscription at %gs, now %d (took %.2f s)",
            "joined" if change.join else "left",
            change.join or change.leave,
            change.at_s,
            self._per_subscription,
            record["seconds"],
        )

    def settle(self) -> None:
        """Consumers that joined stay until the run closes them."""

    def report(self) -> dict[str, Any]:
        return {"consumerChanges": self._made}


def consumer_changes_for(workload: Workload) -> ConsumerChanges | None:
    if not workload.consumer_changes:
        return None
    return ConsumerChanges(workload.consumer_changes, workload.consumer_per_subscription)
