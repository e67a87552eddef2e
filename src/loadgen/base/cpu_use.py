"""The CPU a process used, and how long its threads waited for a CPU, from Linux's schedstat.

Why: a run that falls short of its rate, or shows long latencies, may be telling about the
broker, or about a host too busy to give the client the CPU it asked for. Run-queue wait (time a
thread could run but had no CPU) separates the two: it stays small when the client sleeps on the
broker and grows when other processes take the cores. ``/proc/<pid>/task/<tid>/schedstat`` holds,
per thread, the nanoseconds on a CPU, the nanoseconds waiting on a run queue and how many times
the thread was given a CPU (its time slices).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")


@dataclass(frozen=True)
class CpuUse:
    """Nanoseconds on a CPU and waiting for one, and the time slices, over some span, summed
    over threads."""

    cpu_ns: int = 0
    wait_ns: int = 0
    slices: int = 0


def _read(tasks: Path) -> dict[str, tuple[int, int, int]]:
    """Each thread's (on-CPU ns, run-queue wait ns, time slices) so far; empty where schedstat
    is missing."""
    counters = {}
    try:
        threads = os.listdir(tasks)
    except OSError:
        return {}
    for tid in threads:
        try:
            on_cpu, waiting, slices = (tasks / tid / "schedstat").read_text().split()
        except (OSError, ValueError):  # the thread ended since the listing, or no schedstat
            continue
        counters[tid] = (int(on_cpu), int(waiting), int(slices))
    return counters


class CpuMeter:
    """This process's CPU use since the last :meth:`take` (since it was made, the first time).

    A thread that ended between two takes loses its last part: its counters go with it. A
    thread started since the last take counts from its start.
    """

    def __init__(self, tasks: Path = TASKS):
        self._tasks = tasks
        self._last = _read(tasks)

    def take(self) -> CpuUse:
        now = _read(self._tasks)
        totals = [0, 0, 0]
        for tid, counters in now.items():
            before = self._last.get(tid, (0, 0, 0))
            for index, (value, was) in enumerate(zip(counters, before, strict=True)):
                totals[index] += value - was
        self._last = now
        return CpuUse(*totals)
