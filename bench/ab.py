"""A/B machinery the producer-vs-bare benchmarks share.

Each side runs in a fresh subprocess (``python <bench script> --child SIDE ARGS_JSON``) and
prints one JSON line: messages acknowledged, wall seconds, the CPU time of its own process
(utime + stime via getrusage, all threads) and the wall time it spent in garbage collections
since ``ab`` was imported, with how many collections ran and what they freed
(``gc.callbacks``). The parent alternates the
sides round by round and prints per-round rows, medians, and loadgen/bare ratios of
throughput and CPU per message.
``--cpu N`` pins each child to CPU ``N`` before either side creates its client (through
:func:`loadgen.cpus.pin`, what ``loadgen run --cpus`` does); brokers are never pinned.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from loadgen.cpus import pin, usable_cpus
from loadgen.driver import TopicSpec, open_driver
from loadgen.spec.driver_spec import DriverSpec
from loadgen.worker.local import LocalWorker

SIDES = ("bare", "loadgen")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CollectionTime:
    """Wall time the process spent in garbage collections (all generations) since it was
    created, how many it ran and how many objects they found to free."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self.collected = 0
        self._began = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began
            self.collections += 1
            self.collected += info["collected"]


collection_time = CollectionTime()


def measured(acked: int, start: float, cpu0: float) -> dict:
    return {
        "acked": acked,
        "seconds": time.perf_counter() - start,
        "cpu": cpu_seconds() - cpu0,
        "gc": collection_time.seconds,
        "collections": collection_time.collections,
        "collected": collection_time.collected,
    }


def engine(spec: DriverSpec, topic: TopicSpec, seconds: float, size: int) -> dict:
    """loadgen's own path: the worker's producer loop at an unreachable rate, binned each second."""
    worker = LocalWorker(open_driver(spec))
    worker.driver.create_topics([topic])  # idempotent: the parent already made it
    worker.create_producers([topic.name])
    result = load_for(worker, seconds, size)
    worker.close(delete_topics=False)
    return result


def load_for(worker: LocalWorker, seconds: float, size: int) -> dict:
    """Run ``worker``'s producers unthrottled for ``seconds``, a snapshot each second; measured
    up to the last acknowledgement."""
    cpu0, start = cpu_seconds(), time.perf_counter()
    worker.start_load(10_000_000, [bytes(size)], "NO_KEY")
    acked = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        acked += worker.snapshot(0, 0, warmup=False).sent
    worker.stop_load(30)
    acked += worker.snapshot(0, 0, warmup=False).sent
    return measured(acked, start, cpu0)


def child_main(sides: dict[str, Callable[..., dict]]) -> bool:
    """In a child process (``--child SIDE ARGS``): run that side, print its row, return True."""
    if len(sys.argv) != 4 or sys.argv[1] != "--child":
        return False
    kwargs = json.loads(sys.argv[3])
    cpu = kwargs.pop("cpu", None)
    if cpu is not None:
        pin(usable_cpus(str(cpu)))
    print(json.dumps(sides[sys.argv[2]](**kwargs)))
    return True


def run_side(script: str, side: str, **kwargs: object) -> dict:
    done = subprocess.run(
        [sys.executable, script, "--child", side, json.dumps(kwargs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return per_message(json.loads(done.stdout.strip().splitlines()[-1]))


def per_message(row: dict) -> dict:
    """``row`` (from :func:`measured`) with its rate and its CPU µs per message added."""
    row["rate"] = row["acked"] / row["seconds"]
    row["cpu_us_per_msg"] = row["cpu"] / max(row["acked"], 1) * 1e6
    return row


def parse_args(seconds: float, rounds: int) -> argparse.Namespace:
    """``--seconds`` per run, ``--rounds`` of A then B, ``--size`` of each message, ``--cpu``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cpu", type=int, default=None, help="pin both sides to this CPU")
    return parser.parse_args()


def alternate(
    script: str,
    args: argparse.Namespace,
    fresh_topic: Callable[[str], Callable[[], None]],
    **side_args: object,
) -> dict[str, list[dict]]:
    """Round after round, bare then loadgen, each on a fresh topic: ``fresh_topic(name)`` makes
    it and returns what removes it. Prints each row as it comes; returns the rows by side."""
    rows: dict[str, list[dict]] = {side: [] for side in SIDES}
    for round_number in range(args.rounds):
        for side in SIDES:
            topic = f"bench-{uuid.uuid4().hex[:8]}"
            remove = fresh_topic(topic)
            row = run_side(
                script,
                side,
                topic=topic,
                seconds=args.seconds,
                size=args.size,
                cpu=args.cpu,
                **side_args,
            )
            rows[side].append(row)
            print_row(round_number, side, row)
            remove()
    return rows


def print_row(round_number: int, side: str, row: dict) -> None:
    print(
        f"round {round_number + 1} {side:8} {row['rate']:>10,.0f} msg/s  "
        f"{row['cpu_us_per_msg']:6.2f} µs CPU/msg  ({row['acked']:,} acked, "
        f"{row['gc'] * 1000:.0f} ms in {row['collections']} GCs that freed {row['collected']:,}"
        " objects since start-up)",
        flush=True,
    )


def print_summary(rows: dict[str, list[dict]]) -> None:
    for side in SIDES:
        rate = statistics.median(r["rate"] for r in rows[side])
        cpu = statistics.median(r["cpu_us_per_msg"] for r in rows[side])
        print(f"median {side:8} {rate:>10,.0f} msg/s  {cpu:.2f} µs CPU/msg")
    pairs = list(zip(rows["bare"], rows["loadgen"], strict=True))
    ratios = [lg["rate"] / bare["rate"] for bare, lg in pairs]
    cpu = [lg["cpu_us_per_msg"] / bare["cpu_us_per_msg"] for bare, lg in pairs]
    print(
        f"throughput loadgen/bare per round {[f'{r:.3f}' for r in ratios]} "
        f"median {statistics.median(ratios):.3f}"
    )
    print(
        f"CPU per message loadgen/bare per round {[f'{r:.2f}' for r in cpu]} "
        f"median {statistics.median(cpu):.2f}"
    )
