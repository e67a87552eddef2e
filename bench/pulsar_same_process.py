"""loadgen's Pulsar producer path and the bare send_async loop in one pinned process, taking turns.

Usage: python bench/pulsar_same_process.py [--slice 2] [--pairs 40] [--size 1024] [--cpu 1]

On this host one process's CPU per message moves by ±15 % from one second to the next (a pure
Python loop alone varies 0.90–1.17 s run to run), so two sides in separate processes, seconds
apart, need dozens of rounds before a 2 % difference shows. Here both sides live in one process,
pinned, each with its own client, producer and fresh 16-partition topic (the settings of
:mod:`pulsar_producer_vs_bare`), and take turns for ``--slice`` seconds: a pair is one slice of
each, the order alternating pair by pair, and the ratio is taken within the pair. loadgen's slice
is its worker's load (``start_load``, a snapshot a second and at the end, ``stop_load``); the
bare slice is :func:`pulsar_producer_vs_bare.bare_loop`. Both are measured up to their last
acknowledgement. The first pair warms up and is left out. Beside the ratios it prints how each
side's CPU per message splits between the client's I/O thread (the busiest thread other than
the main one, read from ``/proc/self/task``; acknowledgements run there) and everything else.

Disk: pulsar-lite keeps every message (it has no admin REST to delete a topic), ~45 MB per
second of slice as measured: 100 pairs of 2-s slices write ~18 GB into the broker's temporary data
directory, which goes when the script stops the broker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import uuid

import pulsar

import ab
from loadgen.base.cpus import pin, usable_cpus
from loadgen.driver_api import TopicSpec, open_driver
from loadgen.engine.local_worker import LocalWorker
from pulsar_producer_vs_bare import (
    PARTITIONS,
    bare_loop,
    bare_producer,
    driver_spec,
    full_name,
)


def thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each live thread of this process, by thread id."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        cpu[int(tid)] = (int(fields[11]) + int(fields[12])) / ticks
    return cpu


def busiest_other_thread(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between the two readings of the busiest thread that is not the main one."""
    grown = [cpu - before.get(tid, 0.0) for tid, cpu in after.items() if tid != os.getpid()]
    return max(grown, default=0.0)


def child(url: str, slice_s: float, pairs: int, size: int, cpu: int | None) -> list[dict]:
    """In the pinned child: ``pairs`` + 1 pairs of slices; a row per slice."""
    if cpu is not None:
        pin(usable_cpus(str(cpu)))
    client = pulsar.Client(url, io_threads=1, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    producer = bare_producer(client, f"same-bare-{uuid.uuid4().hex[:8]}")
    worker = LocalWorker(open_driver(driver_spec(url)))
    topic = TopicSpec(full_name(f"same-loadgen-{uuid.uuid4().hex[:8]}"), PARTITIONS)
    worker.driver.create_topics([topic])
    worker.create_producers([topic.name])
    rows = []
    for pair in range(pairs + 1):
        order = ("bare", "loadgen") if pair % 2 else ("loadgen", "bare")
        for side in order:
            threads_before = thread_cpu()
            if side == "bare":
                row = bare_loop(producer, slice_s, size, latency=False)
            else:
                row = ab.load_for(worker, slice_s, size)
            row["io_thread_cpu"] = busiest_other_thread(threads_before, thread_cpu())
            rows.append({"pair": pair, "side": side, **row})
    worker.close(delete_topics=False)
    client.close()
    return rows


def summarize(rows: list[dict]) -> None:
    by_pair: dict[int, dict[str, dict]] = {}
    for row in map(ab.per_message, rows):
        row["io_us"] = row["io_thread_cpu"] / max(row["acked"], 1) * 1e6
        by_pair.setdefault(row["pair"], {})[row["side"]] = row
    measured = [sides for pair, sides in sorted(by_pair.items()) if pair > 0]
    for side in ab.SIDES:
        rates = [sides[side]["rate"] for sides in measured]
        cpu = [sides[side]["cpu_us_per_msg"] for sides in measured]
        io = [sides[side]["io_us"] for sides in measured]
        rest = [sides[side]["cpu_us_per_msg"] - sides[side]["io_us"] for sides in measured]
        print(
            f"{side:8} msg/s median {statistics.median(rates):,.0f} "
            f"(range {min(rates):,.0f}–{max(rates):,.0f}), "
            f"CPU/msg median {statistics.median(cpu):.2f} µs: client I/O thread "
            f"{statistics.median(io):.2f}, the rest {statistics.median(rest):.2f}"
        )
    ratios = [sides["loadgen"]["rate"] / sides["bare"]["rate"] for sides in measured]
    cpu_ratios = [
        sides["loadgen"]["cpu_us_per_msg"] / sides["bare"]["cpu_us_per_msg"] for sides in measured
    ]
    quartiles = statistics.quantiles(ratios, n=4)
    print(
        f"throughput loadgen/bare over {len(ratios)} pairs: median {statistics.median(ratios):.3f}"
        f", quartiles {quartiles[0]:.3f}–{quartiles[2]:.3f}, mean {statistics.mean(ratios):.3f}"
    )
    print(f"CPU per message loadgen/bare: median {statistics.median(cpu_ratios):.3f}")
    n = len(ratios)
    drift = [statistics.median(ratios[i * n // 4 : (i + 1) * n // 4]) for i in range(4)]
    print(f"throughput ratio by quarter of the run (medians): {[f'{r:.3f}' for r in drift]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slice", type=float, default=2.0, help="seconds per side per pair")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cpu", type=int, default=1, help="pin the process to this CPU")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.slice, args.pairs, args.size, args.cpu)))
        return

    from loadgen_drivers.pulsar.local.lite import start_pulsar_lite

    broker = start_pulsar_lite(default_partitions=PARTITIONS)
    url = broker.driver_config["client"]["serviceUrl"]
    try:
        command = [sys.executable, __file__, "--child", url, "--slice", str(args.slice)]
        command += ["--pairs", str(args.pairs), "--size", str(args.size), "--cpu", str(args.cpu)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        summarize(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
