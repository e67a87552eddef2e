"""The run-queue wait share a run reports (``clientCpu``) on an idle host and beside busy ones.

Usage: python bench/host_busy.py [--broker memory|rabbitmq|kafka] [--rate 50000]
                                 [--seconds 20] [--hogs 0,3,10] [--rounds 2]

Each round runs the same workload (1 topic x 16 partitions, 1 KiB, one producer, one consumer,
one process) once per hog count, alternating, with that many ``while True: pass`` processes
beside it (Kafka against a local tansu, started once). It prints, per run, the rate sent
against the rate asked, the run's CPU per message, its threads' run-queue wait share and mean
wait per time slice, and ``hostBusy``: the calibration of
the ``hostBusy`` share of :mod:`loadgen.base.calibration`
and its wait per time slice.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable

import workloads
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import LocalBroker
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen_drivers.kafka.local.tansu import start_tansu
from loadgen_drivers.rabbitmq.local.server import start_rabbitmq

HOG = "while True: pass"
STARTERS: dict[str, Callable[[], LocalBroker]] = {"rabbitmq": start_rabbitmq, "kafka": start_tansu}


def one_run(spec: DriverSpec, rate: float, seconds: float, hogs: int) -> dict:
    workload = workloads.one_topic("host-busy", rate)
    options = RunOptions(duration_s=seconds, warmup_s=3, stats_interval_s=1)
    busy = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hogs)]
    try:
        request = RunRequest(workload, spec, options, placement=Placement(processes=1))
        _, result, outcome = execute(request)
    finally:
        for hog in busy:
            hog.kill()
            hog.wait()
    block = result["clientCpu"]
    return {
        "hogs": hogs,
        "sent_rate": sent_per_second(measured_intervals(outcome.intervals)),
        "cpu_us_per_msg": block["cpuMicrosPerMessage"],
        "wait_share": block["runQueueWaitShare"],
        "wait_per_slice_us": block["runQueueWaitPerSliceMicros"],
        "host_busy": block["hostBusy"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", choices=("memory", *STARTERS), default="memory")
    parser.add_argument("--rate", type=float, default=50_000)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--hogs", default="0,3,10")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    broker = STARTERS[args.broker]() if args.broker in STARTERS else None
    try:
        if broker is None:
            spec = DriverSpec(name="Memory", kind="memory")
        else:
            spec = DriverSpec(name=args.broker, kind=args.broker, config=broker.driver_config)
        for round_number in range(args.rounds):
            for hogs in (int(each) for each in args.hogs.split(",")):
                row = one_run(spec, args.rate, args.seconds, hogs)
                print(
                    f"round {round_number + 1} hogs {row['hogs']:>2}: "
                    f"sent {row['sent_rate']:,.0f}/{args.rate:,.0f} msg/s, "
                    f"{row['cpu_us_per_msg']:.1f} us CPU/msg, "
                    f"wait share {row['wait_share']:.2f}, "
                    f"{row['wait_per_slice_us']:,.0f} us a wait, hostBusy {row['host_busy']}",
                    flush=True,
                )
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
