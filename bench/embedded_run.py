"""A 5-second embedded run against tansu, timed from a cold interpreter: where the seconds go.

Usage: python bench/embedded_run.py [--rounds 3] [--seconds 5] [--rate 2000]

Each round is a fresh process that imports loadgen, starts a local tansu, runs a 1-topic,
4-partition, 1 KiB workload with one producer and one consumer for ``--seconds`` (no warm-up)
through :func:`loadgen.run`, and stops the broker. It prints the wall time of each step and the
run's own lifecycle phases, then the medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def one_round(seconds: float, rate: int) -> dict[str, float]:
    started = time.perf_counter()
    import loadgen
    from loadgen_drivers.kafka.local.tansu import start_tansu

    steps = {"import": time.perf_counter() - started}
    mark = time.perf_counter()
    broker = start_tansu()
    steps["broker start"] = time.perf_counter() - mark
    workload = loadgen.workload(
        name="embedded",
        topics=1,
        partitionsPerTopic=4,
        messageSize=1024,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=rate,
        testDurationMinutes=1,
    )
    mark = time.perf_counter()
    result = loadgen.run(workload, broker, duration=seconds, warmup=0)
    steps["run"] = time.perf_counter() - mark
    mark = time.perf_counter()
    broker.stop()
    steps["broker stop"] = time.perf_counter() - mark
    steps["total"] = time.perf_counter() - started
    steps |= {f"  run: {phase}": value for phase, value in result.phase_seconds.items()}
    assert result.received == result.sent and result.errors == 0
    return steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_round(args.seconds, args.rate)))
        return
    rounds = []
    for _ in range(args.rounds):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--seconds",
                str(args.seconds),
                "--rate",
                str(args.rate),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        rounds.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        "| step | " + " | ".join(f"round {i + 1} s" for i in range(len(rounds))) + " | median s |"
    )
    print("|---|" + "---|" * (len(rounds) + 1))
    for step in rounds[0]:
        values = [r.get(step, 0.0) for r in rounds]
        cells = " | ".join(f"{v:.2f}" for v in values)
        print(f"| {step} | {cells} | {statistics.median(values):.2f} |")


if __name__ == "__main__":
    main()
