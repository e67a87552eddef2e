"""Latency at a modest rate with the default process count against one process per core.

Usage: python bench/default_processes_latency.py [--rounds 4] [--rate 10000] [--seconds 20]

The old default started one worker process per usable core; on a 2-core box at 10k msg/s that
made publish and end-to-end latency worse than one process (issue #27). This runs the same
Kafka workload (1 topic x 16 partitions, 1 KiB, one producer and one consumer, 5 s warm-up) both
ways, alternating, each on a fresh local tansu: "one per core" (``Placement(processes=N)``) and
"default" (``Placement(processes=None)``: sized by :mod:`loadgen.distributed.sizing`). It prints
each run's process count, publish and end-to-end p99 and the medians per side.
"""

from __future__ import annotations

import argparse
import statistics

import workloads
from loadgen.distributed.placement import Placement
from loadgen.distributed.sizing import cpus_here
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen_drivers.kafka.local.tansu import start_tansu


def one_run(placement: Placement, rate: float, seconds: float) -> dict:
    workload = workloads.one_topic("default-processes", rate)
    broker = start_tansu()
    try:
        spec = DriverSpec(name="Kafka", kind="kafka", config=broker.driver_config)
        options = RunOptions(duration_s=seconds, warmup_s=5, stats_interval_s=1)
        _, result, outcome = execute(RunRequest(workload, spec, options, placement=placement))
    finally:
        broker.stop()
    return {
        "processes": result["run"]["placement"]["processes"],
        "publish_p99": result["aggregatedPublishLatency99pct"],
        "e2e_p99": result["aggregatedEndToEndLatency99pct"],
        "complete": not outcome.incomplete,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rate", type=float, default=10_000)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    sides = {"one per core": Placement(processes=cpus_here()), "default": Placement(processes=None)}
    rows: dict[str, list[dict]] = {name: [] for name in sides}
    for number in range(1, args.rounds + 1):
        order = list(sides.items()) if number % 2 else list(reversed(sides.items()))
        for name, placement in order:
            row = one_run(placement, args.rate, args.seconds)
            rows[name].append(row)
            print(
                f"round {number} {name:12} processes {row['processes']}  publish p99 "
                f"{row['publish_p99']:8.2f} ms  e2e p99 {row['e2e_p99']:8.2f} ms  "
                f"complete {row['complete']}",
                flush=True,
            )
    for name, side in rows.items():
        publish = statistics.median(row["publish_p99"] for row in side)
        e2e = statistics.median(row["e2e_p99"] for row in side)
        print(f"median {name:12} publish p99 {publish:8.2f} ms  e2e p99 {e2e:8.2f} ms")


if __name__ == "__main__":
    main()
