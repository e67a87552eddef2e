"""What one loadgen process handles per second of CPU, per driver: the per-process capacity
the default process count is sized by (``BaseDriver.process_capacity``).

Usage: python bench/process_capacity.py [--drivers memory,kafka,pulsar,rabbitmq] [--rounds 3]
       [--seconds 15]

Each round runs, in a fresh interpreter, the whole run path in one process (``runner.execute``
with ``--processes 1``: producer loop, consumer, per-second binning, accounting), unthrottled,
1 topic x 8 partitions, 1 KiB, one producer and one consumer, against a local broker this
script starts (tansu, pulsar-lite, rabbitmq-server; the memory driver needs none). Capacity =
(messages sent + received) / CPU seconds of that interpreter from just before the run to just
after it (getrusage: every thread, the client's native ones included; imports excluded). CPU,
not wall time: the broker shares the cores, so the run rarely gets a whole one. The medians of
the rounds are printed; the drivers' constants carry them (rounded down).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from contextlib import ExitStack

UNREACHABLE_RATE = 10_000_000


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(kind: str, config: dict, seconds: float) -> None:
    """One run in this interpreter; prints its counts and CPU as one JSON line."""
    import workloads
    from loadgen.distributed.placement import Placement
    from loadgen.driver_api.driver_spec import DriverSpec
    from loadgen.running.request import RunOptions, RunRequest
    from loadgen.running.runner import execute

    workload = workloads.one_topic(f"capacity-{kind}", UNREACHABLE_RATE, partitionsPerTopic=8)
    spec = DriverSpec(name=kind.capitalize(), kind=kind, config=config)
    options = RunOptions(duration_s=seconds, warmup_s=0, stats_interval_s=1, drain_timeout_s=30)
    request = RunRequest(workload, spec, options, placement=Placement(processes=1))
    before = cpu_seconds()
    _, result, outcome = execute(request)
    cpu = cpu_seconds() - before
    handled = result["totalMessagesSent"] + result["totalMessagesReceived"]
    row = {"handled": handled, "cpu": cpu, "complete": not outcome.incomplete}
    print(json.dumps(row), flush=True)


def one_round(kind: str, config: dict, seconds: float) -> dict:
    command = [sys.executable, __file__, "--child", kind, json.dumps(config), str(seconds)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    row["capacity"] = row["handled"] / row["cpu"]
    return row


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--drivers", default="memory,kafka,pulsar,rabbitmq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    args = parser.parse_args()
    from loadgen.local_brokers.catalogue import STARTERS

    for kind in args.drivers.split(","):
        with ExitStack() as stack:
            config: dict = {}
            if kind != "memory":
                broker = STARTERS[kind]()
                stack.callback(broker.stop)
                config = broker.driver_config
            rows = [one_round(kind, config, args.seconds) for _ in range(args.rounds)]
        for number, row in enumerate(rows, 1):
            print(
                f"{kind:9} round {number}: {row['handled']:>10,} sent + received in "
                f"{row['cpu']:6.1f} CPU s = {row['capacity']:>10,.0f} per CPU second "
                f"({1e6 / row['capacity']:.2f} µs each), complete {row['complete']}"
            )
        median = statistics.median(row["capacity"] for row in rows)
        print(f"{kind:9} median {median:,.0f} messages per CPU second", flush=True)


if __name__ == "__main__":
    main()
