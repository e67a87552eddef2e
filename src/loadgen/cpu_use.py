"""The CPU a process used, and how long its threads waited for a CPU, from Linux's schedstat.

Why: a run that falls short of its rate, or shows long latencies, may be telling about the
broker, or about a host too busy to give the client the CPU it asked for. Run-queue wait (time a
thread could run but had no CPU) separates the two: it stays small when the client sleeps on the
broker and grows when other processes take the cores. ``/proc/<pid>/task/<tid>/schedstat`` holds,
per thread, the nanoseconds on a CPU and the nanoseconds waiting on a run queue.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")

HOST_BUSY_SHARE = 0.5
"""A client whose threads waited for a CPU at least this share of the time they could run was
on a busy host: its rates and latencies measure the host too. Measured (bench/RESULTS.md,
"Is it the broker or the host?"): 0.18-0.27 on an idle 2-core machine at 5k-50k msg/s, 0.55-0.66
beside 3-10 busy processes."""


@dataclass(frozen=True)
class CpuUse:
    """Nanoseconds on a CPU and waiting for one, over some span, summed over threads."""

    cpu_ns: int = 0
    wait_ns: int = 0


def _read(tasks: Path) -> dict[str, tuple[int, int]]:
    """Each thread's (on-CPU ns, run-queue wait ns) so far; empty where schedstat is missing."""
    counters = {}
    try:
        threads = os.listdir(tasks)
    except OSError:
        return {}
    for tid in threads:
        try:
            on_cpu, waiting, _ = (tasks / tid / "schedstat").read_text().split()
        except (OSError, ValueError):  # the thread ended since the listing, or no schedstat
            continue
        counters[tid] = (int(on_cpu), int(waiting))
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
        cpu = wait = 0
        for tid, (on_cpu, waiting) in now.items():
            before_cpu, before_wait = self._last.get(tid, (0, 0))
            cpu += on_cpu - before_cpu
            wait += waiting - before_wait
        self._last = now
        return CpuUse(cpu, wait)
