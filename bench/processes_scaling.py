"""Scale-out on one host: the same unthrottled run with 1 worker process and with 2.

Usage: python bench/processes_scaling.py [--driver memory|kafka|pulsar] [--rounds 5]
       [--seconds 8] [--compare processes|pinning]

Runs the real `loadgen run` path (runner.execute, so the coordinator, the HTTP control plane
and the exact merge are all in it) with ``producerRate`` far above what either can reach, and
reports the measured msg/s sent and received. One process runs everything in the coordinator's
own process; two are `loadgen worker` processes on loopback ports. The memory driver runs two
topics split by topic (its broker lives in each process); Kafka runs against a local tansu
broker this script starts, split OMB's way (one producer process, one consumer process). The
sides alternate round by round; the ratio of each round is 2-process / 1-process msg/s.
Pulsar runs against a local pulsar-lite (OMB split). ``--compare pinning`` runs 2 processes
both times instead, unpinned and pinned one CPU each (``--cpus 0,1``); the ratio is pinned /
unpinned.
"""

from __future__ import annotations

import argparse
import statistics
from contextlib import ExitStack

import workloads
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen.spec import Workload

UNREACHABLE_RATE = 10_000_000


def workload(driver: str) -> Workload:
    return workloads.one_topic(
        f"scaling-{driver}", UNREACHABLE_RATE, topics=2, partitionsPerTopic=8
    )


SIDES = {
    "processes": {"1 process": Placement(processes=1), "2 processes": Placement(processes=2)},
    "pinning": {
        "2 unpinned": Placement(processes=2),
        "2 pinned": Placement(processes=2, cpus=(0, 1)),
    },
}


def one_run(spec: DriverSpec, chosen: Workload, placement: Placement, seconds: float) -> dict:
    options = RunOptions(duration_s=seconds, warmup_s=2, stats_interval_s=1, drain_timeout_s=30)
    _, result, outcome = execute(RunRequest(chosen, spec, options, placement=placement))
    measured = measured_intervals(outcome.intervals)
    wall = sum(s.seconds for s in measured)
    return {
        "sent": sent_per_second(measured),
        "received": sum(s.received for s in measured) / wall,
        "e2e_p99_ms": result["aggregatedEndToEndLatency99pct"],
        "complete": not outcome.incomplete,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", choices=("memory", "kafka", "pulsar"), default="memory")
    parser.add_argument("--compare", choices=tuple(SIDES), default="processes")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8)
    args = parser.parse_args()
    with ExitStack() as stack:
        if args.driver == "kafka":
            from loadgen_drivers.kafka.local.tansu import start_tansu

            broker = start_tansu()
            stack.callback(broker.stop)
            spec = DriverSpec(name="Kafka", kind="kafka", config=broker.driver_config)
        elif args.driver == "pulsar":
            from loadgen_drivers.pulsar.local.lite import start_pulsar_lite

            broker = start_pulsar_lite()
            stack.callback(broker.stop)
            spec = DriverSpec(name="Pulsar", kind="pulsar", config=broker.driver_config)
        else:
            spec = DriverSpec(name="Memory", kind="memory")
        chosen = workload(args.driver)
        ratios = []
        (base_name, base), (other_name, other) = SIDES[args.compare].items()
        for round_number in range(1, args.rounds + 1):
            rows = {
                base_name: one_run(spec, chosen, base, args.seconds),
                other_name: one_run(spec, chosen, other, args.seconds),
            }
            ratio = rows[other_name]["sent"] / rows[base_name]["sent"]
            ratios.append(ratio)
            for name, row in rows.items():
                print(
                    f"round {round_number} {name:12} sent {row['sent']:>10,.0f} msg/s  received "
                    f"{row['received']:>10,.0f} msg/s  e2e p99 {row['e2e_p99_ms']:>9.1f} ms  "
                    f"complete {row['complete']}"
                )
            print(f"round {round_number} ratio {other_name} / {base_name} sent {ratio:.2f}")
        print(f"median ratio sent {statistics.median(ratios):.2f} over {args.rounds} rounds")


if __name__ == "__main__":
    main()
