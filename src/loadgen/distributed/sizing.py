"""How many local worker processes a run gets when ``--processes`` does not say.

A process is only worth starting when the rate needs it: beside the coordinator and a broker on
the same host, each extra process adds its own latency
(bench/results/distributed-and-scaling.md "Default process count"). So the count is the rate the
workload asks for (messages sent plus received per second) against what one process handles
while staying at most half busy (the driver's
capacity in the host's calibration, :mod:`loadgen.base.calibration`), never more than the CPUs
this process may use (affinity and cgroup quota) nor more than the split keeps busy. A run with
no fixed rate (rate discovery, a catch-up drain) gets every CPU the split can use.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.base.cpus import available_cpus
from loadgen.distributed.split import split
from loadgen.engine.plan import consumer_subscriptions, producer_topics
from loadgen.spec import Workload

BUSY_SHARE = 0.5
"""Of a process's capacity, how much a run may ask of it: past half a core its own queues
(callbacks waiting for the GIL) start to show in the latency it measures."""


@dataclass(frozen=True)
class ProcessCount:
    """How many processes a run has on this host, and why (the result's
    ``run.placement.processesChosen``)."""

    count: int
    chosen_by: str
    """``--processes``, ``--cpus``, ``--workers`` or ``workload``."""
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "chosenBy": self.chosen_by, "reason": self.reason}


def cgroup_cpu_limit(
    cgroups: Path = Path("/proc/self/cgroup"), root: Path = Path("/sys/fs/cgroup")
) -> float | None:
    """The CPUs this process's cgroup quota allows (``cpu.max``, v2, or
    ``cpu.cfs_quota_us``/``cpu.cfs_period_us``, v1), the tightest of the cgroup and its
    parents; ``None`` without a quota (or where none can be read)."""
    try:
        lines = cgroups.read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            limits += [_v2_limit(d / "cpu.max") for d in _up_from(root, path)]
        elif "cpu" in controllers.split(","):
            base = root / controllers
            limits += [_v1_limit(d) for d in _up_from(base, path)]
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def _up_from(root: Path, path: str) -> list[Path]:
    """``root/path`` and each of its parents up to ``root``."""
    parts = [part for part in path.split("/") if part]
    return [root.joinpath(*parts[:depth]) for depth in range(len(parts), -1, -1)]


def _v2_limit(cpu_max: Path) -> float | None:
    try:
        quota, period = cpu_max.read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _v1_limit(directory: Path) -> float | None:
    try:
        quota = int((directory / "cpu.cfs_quota_us").read_text())
        period = int((directory / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def whole_cpus(affinity: int, quota: float | None) -> int:
    """Whole CPUs a run may keep busy: its affinity, cut to its quota (1.5 CPUs is one)."""
    return max(1, min(affinity, math.floor(quota) if quota is not None else affinity))


def busy_processes(rule: str, workload: Workload, most: int) -> int:
    """The most processes (up to ``most``) the split ``rule`` gives each some producer or
    consumer; more would start idle ones (OMB's split puts producers on half of them)."""
    topics = [f"t{index}" for index in range(workload.topics)]
    producers = producer_topics(topics, workload.producers_per_topic)
    consumers = consumer_subscriptions(
        topics, workload.subscriptions_per_topic, workload.consumer_per_subscription
    )
    busy = 1
    for count in range(2, most + 1):
        if all(a.role != "idle" for a in split(rule, count, topics, producers, consumers)):
            busy = count
    return busy


def asked_rate(workload: Workload) -> float | None:
    """Messages sent plus received per second at the workload's highest rate; ``None`` when
    it has none fixed (rate discovery, or a catch-up run, whose drain reads as fast as it can)."""
    if workload.is_rate_discovery or workload.is_catch_up:
        return None
    profile = workload.producer_rate_profile or ()
    highest = max([workload.producer_rate, *(segment.rate for segment in profile)])
    readers = workload.subscriptions_per_topic if workload.total_consumers else 0
    return highest * (1 + readers)


def default_process_count(
    rule: str, workload: Workload, capacity: float | None, cpus: int, driver: str
) -> ProcessCount:
    """The count for a run on this host without ``--processes``: see the module's doc."""
    busy = busy_processes(rule, workload, cpus)
    rate = asked_rate(workload)
    if rate is None:
        reason = f"no fixed rate: every usable CPU the split keeps busy ({busy} of {cpus})"
        return ProcessCount(busy, "workload", reason)
    if capacity is None:
        reason = f"no calibrated capacity for the {driver} driver (loadgen calibrate): one process"
        return ProcessCount(1, "workload", reason)
    share = capacity * BUSY_SHARE
    needed = math.ceil(rate / share)
    count = max(1, min(needed, busy))
    reason = (
        f"{rate:,.0f} msg/s sent + received at {share:,.0f} per process (half the {driver} "
        f"driver's {capacity:,.0f}): {needed} needed; {cpus} usable CPU(s), {busy} kept busy"
    )
    return ProcessCount(count, "workload", reason)


def cpus_here() -> int:
    """The CPUs a run on this host may keep busy (affinity and cgroup quota)."""
    affinity = available_cpus()
    return whole_cpus(len(affinity) if affinity else os.cpu_count() or 1, cgroup_cpu_limit())
