"""Where a whole ``loadgen run`` spends its CPU, thread by thread, at its maximum rate.

Usage: python bench/thread_cpu.py [--driver memory|kafka] [--consumers 0|1] [--seconds 14]
                                  [--display live|plain|quiet] [--rounds 3]

Runs the CLI unthrottled (1 topic x 16 partitions, 1 KiB, one producer, ``--processes 1``, 1-s
stats intervals; Kafka against a local tansu started once) and reads, once a second, every
thread's CPU time of the run's process tree from ``/proc/<pid>/task/<tid>/schedstat``, by the
thread's OS name (loadgen names its Python threads for the OS: :mod:`loadgen.base.thread_names`).
``--display live`` gives the run a terminal (a pty), so the live view draws as a user sees it.

It prints, per thread name, the median and the highest share of a core over the 1-s samples of
the steady state (the first 3 and the last 2 left out) and the CPU µs per message sent, and the
share of everything that is not the producer loop, a consumer or the client's own threads:
what the checkpoint writer (``loadgen-journal``), the stats snapshots and the display (the main
thread, rich's refresh thread) take from a run at its highest rate.
"""

from __future__ import annotations

import argparse
import itertools
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import yaml

import ab
from loadgen.driver_api import TopicSpec
from loadgen_drivers.kafka.local.tansu import start_tansu

HOT = ("producer-loop", "memory-consumer", "kafka-consumer-", "rdk:")
"""Thread names (prefixes) that do the sending and receiving: the client's work, not loadgen's
bookkeeping."""
SKIP_FIRST, SKIP_LAST = 3, 2


def process_tree(pid: int) -> list[int]:
    pids = [pid]
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            pids += [p for child in children.read_text().split() for p in process_tree(int(child))]
        except OSError:
            continue
    return pids


def thread_cpu(pid: int) -> dict[tuple[int, int], tuple[str, int]]:
    """(pid, tid) -> (OS thread name, CPU ns so far) over ``pid``'s process tree."""
    found = {}
    for process in process_tree(pid):
        for task in Path(f"/proc/{process}/task").glob("*"):
            try:
                name = (task / "comm").read_text().strip()
                on_cpu = int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            found[(process, int(task.name))] = (name, on_cpu)
    return found


def label(name: str, *, main: bool) -> str:
    if main:
        return "main (snapshots, display)"
    if name.startswith("rdk:"):
        return "rdk:" + name[4:].rstrip("0123456789-")  # librdkafka: one thread per broker
    if name.startswith("Thread-"):
        return "unnamed (rich's refresh, in live)"
    return name


def shares_per_second(samples: list[dict]) -> dict[str, list[float]]:
    """Per thread label, its share of a core in each 1-s step between samples."""
    shares: dict[str, list[float]] = defaultdict(list)
    for (t0, before), (t1, after) in itertools.pairwise(samples):
        step: dict[str, float] = defaultdict(float)
        for (pid, tid), (name, on_cpu) in after.items():
            was = before.get((pid, tid), (name, 0))[1]
            step[label(name, main=pid == tid)] += (on_cpu - was) / 1e9 / (t1 - t0)
        for name, share in step.items():
            shares[name].append(share)
    return shares


def workload(seconds: float, consumers: int) -> dict:
    document = ab.producer_only(TopicSpec("t", 16), seconds, 1024)
    document.update(subscriptionsPerTopic=consumers, consumerPerSubscription=1, name="thread-cpu")
    return document


def one_run(driver: dict, args: argparse.Namespace) -> tuple[dict[str, list[float]], float]:
    """One run; its per-thread shares and the messages it sent per second."""
    with tempfile.TemporaryDirectory(prefix="thread-cpu-") as scratch:
        folder = Path(scratch)
        for name, document in (
            ("workload.yaml", workload(args.seconds, args.consumers)),
            ("driver.yaml", driver),
        ):
            (folder / name).write_text(yaml.safe_dump(document, sort_keys=False))
        command = [sys.executable, "-m", "loadgen", "run", "-d", str(folder / "driver.yaml")]
        command += [str(folder / "workload.yaml"), "--processes", "1", "--warmup", "0"]
        command += ["--duration", f"{args.seconds:g}s", "--stats-interval", "1s", "--no-report"]
        command += ["-o", str(folder / "out")]
        command += {"quiet": ["-q"], "plain": ["--plain"], "live": []}[args.display]
        samples = sample_while_running(command, live=args.display == "live")
        result = yaml.safe_load(next((folder / "out").glob("*.json")).read_text())
    steady = samples[SKIP_FIRST : len(samples) - SKIP_LAST]
    return shares_per_second(steady), result["totalMessagesSent"] / sum(
        result["run"]["phaseSeconds"].values()
    )


def sample_while_running(command: list[str], *, live: bool) -> list[tuple[float, dict]]:
    """Run ``command`` (on a pty when ``live``), sampling its threads' CPU each second."""
    if live:
        leader, follower = pty.openpty()
        child = subprocess.Popen(command, stdout=follower, stderr=follower)
        os.close(follower)
        threading.Thread(target=drain, args=(leader,), daemon=True).start()
    else:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    samples = []
    while child.poll() is None:
        samples.append((time.monotonic(), thread_cpu(child.pid)))
        time.sleep(1.0)
    if child.returncode != 0:
        sys.exit(f"loadgen run failed (exit {child.returncode}): {' '.join(command)}")
    return samples


def drain(leader: int) -> None:
    """Read what the live view draws, as a terminal would, until the run closes the pty."""
    try:
        while os.read(leader, 65536):
            pass
    except OSError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", choices=("memory", "kafka"), default="memory")
    parser.add_argument("--consumers", type=int, choices=(0, 1), default=0)
    parser.add_argument("--seconds", type=float, default=14)
    parser.add_argument("--display", choices=("live", "plain", "quiet"), default="live")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    broker = start_tansu() if args.driver == "kafka" else None
    try:
        driver = {"name": "Memory", "driver": "memory"}
        if broker is not None:
            driver = {"name": "Kafka", "driver": "kafka"}
            driver["commonConfig"] = f"bootstrap.servers={broker.address}"
            driver["producerConfig"] = "acks=all\nlinger.ms=1\nbatch.size=131072"
            driver["consumerConfig"] = "auto.offset.reset=earliest"
        runs = [one_run(driver, args) for _ in range(args.rounds)]
    finally:
        if broker is not None:
            broker.stop()
    report(runs, args)


def report(runs: list[tuple[dict[str, list[float]], float]], args: argparse.Namespace) -> None:
    rate = statistics.median(r for _, r in runs)
    print(
        f"{args.driver}, {args.consumers} consumer(s), display {args.display}: {args.rounds} runs"
    )
    print(f"sent {rate:,.0f} msg/s (median of the runs' whole-phase rates)")
    print(
        f"{'thread':36} {'median':>8} {'max':>8} {'µs/msg':>8}   (share of a core per 1-s sample)"
    )
    names = sorted({name for shares, _ in runs for name in shares})
    pooled = {name: [s for shares, _ in runs for s in shares.get(name, [])] for name in names}
    medians = {name: statistics.median(values) for name, values in pooled.items()}
    for name in sorted(names, key=lambda n: -medians[n]):
        if medians[name] < 0.001:
            continue
        print(
            f"{name:36} {medians[name]:8.3f} {max(pooled[name]):8.3f} "
            f"{medians[name] / rate * 1e6:8.3f}"
        )
    bookkeeping = sum(m for n, m in medians.items() if not n.startswith(HOT))
    total = sum(medians.values())
    print(
        f"loadgen's bookkeeping (all but the loop, consumers and client threads): "
        f"{bookkeeping:.3f} of a core, {bookkeeping / total:.1%} of the run's CPU"
    )


if __name__ == "__main__":
    main()
