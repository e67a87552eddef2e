"""What a run produced: the outcome a scenario returns, and where the runner wrote it.

Plain data, below the scenarios that fill it in and the result builders that read it
(:mod:`loadgen.formats.result_json`, :mod:`loadgen.formats.metadata`), so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.engine.accounting import Accounting
from loadgen.engine.local_worker import Totals
from loadgen.engine.stats import IntervalStats
from loadgen.spec import Workload

GIB = 1024**3
MIN_BACKLOG = 1000
"""OMB's floor for the drained backlog of a catch-up run, in messages."""
WHAT_STOPPED = {"publish": "acknowledgements", "consume": "deliveries"}
"""What an outage of each role (:mod:`loadgen.running.scenarios.outages`) went without."""


@dataclass(frozen=True)
class CatchUpPlan:
    """What a catch-up run aims at, from the workload."""

    target_bytes: int
    message_size: int
    drain_ratio: float
    catch_up_subscriptions: int
    """Catch-up subscriptions per topic: the backlog counts for each of them."""

    @classmethod
    def of(cls, workload: Workload) -> CatchUpPlan:
        return cls(
            target_bytes=int(workload.consumer_backlog_size_gb * GIB),
            message_size=workload.message_size,
            drain_ratio=workload.backlog_drain_ratio,
            catch_up_subscriptions=workload.catch_up_subscriptions_per_topic,
        )

    @property
    def target_messages(self) -> int:
        return self.target_bytes // self.message_size

    @property
    def drained_below(self) -> int:
        """The backlog (messages) at which the drain counts as done."""
        return max(MIN_BACKLOG, int((1 - self.drain_ratio) * self.target_messages))


@dataclass(frozen=True)
class DrainVerdict:
    """How a catch-up drain ended, and the rates over its last window that decided it."""

    completed: bool
    reason: str
    """``drained``; ``stalled`` (the backlog did not shrink over ``window_seconds``);
    ``timeout`` (it shrank, but not below the target within ``timeout_seconds``)."""
    backlog_at_start: int
    backlog_at_end: int
    consume_rate: float
    """Catch-up reads per second (all catch-up subscriptions) over the last window."""
    publish_rate: float
    """Messages sent per second over the last window."""
    window_seconds: float
    timeout_seconds: float
    """0: no timeout and no stall check (OMB's wait)."""

    def describe(self, subscriptions: int) -> str:
        return describe_drain(self.to_json(), subscriptions)

    def to_json(self) -> dict[str, Any]:
        return {
            "completed": self.completed,
            "reason": self.reason,
            "backlogAtStart": self.backlog_at_start,
            "backlogAtEnd": self.backlog_at_end,
            "consumeRate": self.consume_rate,
            "publishRate": self.publish_rate,
            "windowSeconds": self.window_seconds,
            "timeoutSeconds": self.timeout_seconds or None,
        }


def describe_drain(block: dict[str, Any], subscriptions: int) -> str:
    """A drain verdict (the result's ``verdicts.drain``) in one line naming the rates."""
    if block["completed"]:
        return f"drained {block['backlogAtStart']:,} messages"
    reads = f"consumers at {block['consumeRate']:,.0f} msg/s"
    growth = block["publishRate"] * subscriptions - block["consumeRate"]
    left = (
        f"{block['backlogAtEnd']:,} messages left, producers at {block['publishRate']:,.0f} msg/s"
    )
    if block["reason"] == "stalled" and growth > 0:
        return f"{reads} cannot drain a backlog growing at {growth:,.0f} msg/s ({left})"
    if block["reason"] == "stalled":
        return f"{reads} did not shrink the backlog in {block['windowSeconds']:.0f} s ({left})"
    timeout = f"{block['timeoutSeconds']:.0f}-s timeout"
    return f"the backlog did not drain within the {timeout} ({reads}; {left})"


@dataclass
class CatchUpOutcome:
    """When each phase began and ended (epoch ms, interval boundaries) and what it did."""

    plan: CatchUpPlan
    build_started_ms: int = 0
    build_ended_ms: int = 0
    target_reached: bool = False
    backlog_messages: int = 0
    """The catch-up subscriptions' backlog when their consumers resumed."""
    drain_ended_ms: int = 0
    """0 while a phase has not ended (a run cut short)."""
    drained: bool = False
    drain: DrainVerdict | None = None
    """``None`` while the drain has not ended (a run cut short)."""

    @property
    def build_seconds(self) -> float:
        return (self.build_ended_ms - self.build_started_ms) / 1000

    @property
    def drain_seconds(self) -> float:
        return max(self.drain_ended_ms - self.build_ended_ms, 0) / 1000


@dataclass
class RunOutcome:
    """Everything measured in one run, complete or not."""

    intervals: list[IntervalStats] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    topics: list[str] = field(default_factory=list)
    started_ms: int = 0
    ended_ms: int = 0
    incomplete: bool = False
    stop_reason: str | None = None
    stop_detail: str = ""
    pending_acks: int = 0
    drain_seconds: float = 0.0
    undelivered: int = 0
    backlog_at_stop: int | None = None
    """The backlog when producers stopped, before the drain of what was in flight (the last
    interval folds that drain in, so its backlog is the one after it)."""
    counts_inconclusive: bool = False
    """The drain's counts cannot show that each acknowledged message arrived: some arrived
    twice, or a send counted as failed may have been stored (its confirm lost with a
    connection) and delivered in place of one still on its way. The broker is then asked what
    it still holds, as when messages are ``undelivered``."""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each lifecycle phase that ran (``topics``, ``probe``, ``measure``...)."""
    placement: dict[str, Any] = field(default_factory=dict)
    """Where it ran (:meth:`loadgen.engine.contract.Worker.placement`)."""
    worker_intervals: dict[str, list[IntervalStats]] = field(default_factory=dict)
    """Each worker's snapshots, when the run was split over workers."""
    accounting: Accounting | None = None
    """Duplicates, reorders and losses (:mod:`loadgen.engine.accounting`); ``None`` when the run
    could not account (a message without an id, or the ranges could not be collected)."""
    catch_up: CatchUpOutcome | None = None
    """The backlog phases of a catch-up or mixed run."""
    extensions: dict[str, Any] = field(default_factory=dict)
    """Result fields a scenario part adds (``rateDiscovery``, ``rateProfile``)."""


@dataclass(frozen=True)
class SavedRun:
    """A finished run as it was saved: where its result document went, the document, and the
    outcome it was built from (a report is drawn from the file later)."""

    path: Path | None
    """``None`` when no directory took the result (it was printed instead)."""
    result: dict[str, Any]
    outcome: RunOutcome
