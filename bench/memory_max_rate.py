"""The harness ceiling: the memory driver's maximum msg/s in one process, latency recording on.

Usage: python bench/memory_max_rate.py [--seconds 10] [--rounds 3] [--size 1024] [--vs-run]

Runs the real worker path (producer loop, per-message callbacks, recorders, a snapshot every
second) unthrottled against the in-process broker, once producer-only and once with one
consumer, each in a fresh subprocess, measured after a 1-s warm-up. Prints msg/s, CPU µs per
message and the snapshots' share (of wall time, and in cores of CPU), and the Python-loop
reference (:func:`ab.reference`) before and after, with each median rate times it: the figure
that compares across days. ``LOADGEN_PURE_PYTHON=1`` measures the pure-Python engine.

``--vs-run`` then compares, producer-only, loadgen's loop with the whole ``loadgen run`` process
tree as the Kafka, Pulsar and RabbitMQ scripts do (:mod:`ab`: sides ``loadgen`` and ``run``,
rotated per round, ratios run/loadgen); there is no bare side, the broker being loadgen's own.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import ab
from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.plan import consumer_subscriptions

MEMORY = DriverSpec(name="Memory", kind="memory")
WARMUP_S = 1.0
PARTITIONS = 16


def target(topic: str) -> tuple[DriverSpec, TopicSpec]:
    """The in-process broker of each side's own process: the topic is made where it is used."""
    return MEMORY, TopicSpec(topic, PARTITIONS)


def vs_run(args: argparse.Namespace) -> None:
    """loadgen's loop against the whole ``loadgen run``, through :mod:`ab`."""
    sides = argparse.Namespace(**vars(args), sides=("loadgen", "run"), cpu=None)
    ab.print_summary(ab.alternate(__file__, sides, lambda _topic: lambda: None))


def measure(seconds: float, size: int, consumers: int) -> dict:
    """Rates and CPU over ``seconds`` after a first interval of warm-up (the loop, the
    consumer's first batches and the first snapshot start up in it, as in a run's warm-up)."""
    worker = LocalWorker(open_driver(MEMORY))
    topics = worker.create_topics(1, PARTITIONS)
    worker.create_consumers(consumer_subscriptions(topics, consumers, 1))
    worker.create_producers(topics)
    worker.start_load(10_000_000, [bytes(size)], "NO_KEY")
    time.sleep(WARMUP_S)
    worker.snapshot(0, 0, warmup=True)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    sent = received = 0
    snapshot_wall = snapshot_cpu = 0.0
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        before, before_cpu = time.perf_counter(), time.thread_time()
        interval = worker.snapshot(0, 0, warmup=False)
        snapshot_cpu += time.thread_time() - before_cpu
        snapshot_wall += time.perf_counter() - before
        sent, received = sent + interval.sent, received + interval.received
    wall = time.perf_counter() - start
    worker.stop_load(5)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    worker.close(delete_topics=True)
    return {
        "sent_rate": sent / wall,
        "received_rate": received / wall,
        "cpu_us_per_msg": cpu / max(sent, 1) * 1e6,
        "snapshot_share": snapshot_wall / wall,
        "snapshot_cores": snapshot_cpu / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--vs-run", action="store_true", help="then loadgen's loop vs loadgen run")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.seconds, args.size, args.child)))
        return
    reference_ns = [ab.reference_loop(__file__, args)]
    medians: dict[str, float] = {}
    for consumers in (0, 1):
        rows = []
        for _ in range(args.rounds):
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--seconds",
                    str(args.seconds),
                    "--size",
                    str(args.size),
                    "--child",
                    str(consumers),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        label = "producer-only" if consumers == 0 else "1 producer + 1 consumer"
        for row in rows:
            print(
                f"{label:24} sent {row['sent_rate']:>10,.0f} msg/s  received "
                f"{row['received_rate']:>10,.0f} msg/s  {row['cpu_us_per_msg']:.2f} µs CPU/msg  "
                f"snapshots {row['snapshot_share']:.1%} of wall time, "
                f"{row['snapshot_cores']:.3f} core"
            )
        median = statistics.median(r["sent_rate"] for r in rows)
        print(f"{label:24} median sent {median:,.0f} msg/s")
        medians[label] = median
    reference_ns.append(ab.reference_loop(__file__, args))
    reference = statistics.mean(reference_ns)
    print(f"reference loop: {' then '.join(f'{ns:.0f}' for ns in reference_ns)} ns/iteration")
    for label, median in medians.items():
        print(f"{label:24} rate × reference ns / 1e9 = {median * reference / 1e9:.3f}")
    if args.vs_run:
        vs_run(args)


if __name__ == "__main__":
    if not ab.child_main({**ab.loadgen_sides(target), "reference": ab.reference}):
        main()
