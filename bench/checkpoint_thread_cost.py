"""What the checkpoint costs the measurement thread per interval, in CPU and wall time.

Usage: PYTHONPATH=src python bench/checkpoint_thread_cost.py [--seconds 30]

A real memory run as fast as the harness goes (OMB's 1-topic / 16-partition / 1 KiB max case),
1-s intervals, with an output directory so the journal is written. ``Listeners.interval`` is timed
on the thread that calls it (the measurement thread; the run's only listener is the checkpoint):
``time.thread_time`` for its CPU, ``time.perf_counter`` for how long the run waited. Prints the
median, p90 and max per interval in ms. Point PYTHONPATH at another checkout to compare.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import Listeners
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec.workload import load_workload

WORKLOAD = (
    Path(__file__).resolve().parents[1] / "configs/workloads/1-topic-16-partitions-1kb-max.yaml"
)
"""OMB's 1-topic / 16-partition / 1 KiB case at ``producerRate`` 10M: unthrottled."""


def timed_listeners(cpu: list[float], wall: list[float]) -> None:
    """Record every ``Listeners.interval`` call's thread CPU and wall time, in ms."""
    tell = Listeners.interval

    def interval(self: Listeners, stats: object, backlog: int) -> None:
        began, began_cpu = time.perf_counter(), time.thread_time()
        tell(self, stats, backlog)  # type: ignore[arg-type]
        cpu.append((time.thread_time() - began_cpu) * 1000)
        wall.append((time.perf_counter() - began) * 1000)

    Listeners.interval = interval  # type: ignore[method-assign]


def summary(name: str, values: list[float]) -> str:
    p90 = statistics.quantiles(values, n=10, method="inclusive")[-1]
    return f"{name}: median {statistics.median(values):.3f} p90 {p90:.3f} max {max(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    cpu: list[float] = []
    wall: list[float] = []
    timed_listeners(cpu, wall)
    options = RunOptions(duration_s=args.seconds, warmup_s=0, stats_interval_s=1)
    memory = DriverSpec(name="Memory", kind="memory")
    with tempfile.TemporaryDirectory() as out:
        report = run_one(RunRequest(load_workload(WORKLOAD), memory, options, out_dir=Path(out)))
    rate = report.result["totalMessagesSent"] / args.seconds
    print(f"{len(cpu)} intervals, {rate:,.0f} msg/s; per interval, ms on the measurement thread")
    print(summary("CPU ", cpu))
    print(summary("wall", wall))


if __name__ == "__main__":
    main()
