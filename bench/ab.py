"""A/B machinery the producer-vs-bare benchmarks share.

Each side runs in a fresh subprocess (``python <bench script> --child SIDE ARGS_JSON``) and
prints one JSON line: messages acknowledged, wall seconds, the CPU time of its own process
(utime + stime via getrusage, all threads) and the wall time it spent in garbage collections
since ``ab`` was imported, with how many collections ran and what they freed
(``gc.callbacks``). The sides (``--sides``, all three by default):

- ``bare``: the script's own client loop, as a user would write it;
- ``loadgen``: loadgen's producer loop in the child (:func:`engine`);
- ``run``: the whole ``loadgen run`` CLI as a subprocess of the child (:func:`whole_run`),
  reported from its result JSON, with the CPU of its whole process tree beside it.

The parent runs every side once per round on a fresh topic each, rotating the order so no side
always goes first (bare, loadgen, run; then loadgen, run, bare; then run, bare, loadgen; two
sides simply alternate), and prints per-round rows, medians, and each side's ratios to the
first side given (loadgen/bare and run/bare by default) of throughput and CPU per message.
``--cpu N`` pins each child to CPU ``N`` before either side creates its client (through
:func:`loadgen.base.cpus.pin`, what ``loadgen run --cpus`` does; the ``run`` side's process tree
inherits it); brokers are never pinned.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import yaml

from loadgen.base.cpus import pin, usable_cpus
from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker

SIDES = ("bare", "loadgen", "run")
UNREACHABLE_RATE = 10_000_000


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu_seconds() -> float:
    """User + system time of every finished child process (and of theirs that they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
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


def loadgen_sides(
    target: Callable[..., tuple[DriverSpec, TopicSpec]],
) -> dict[str, Callable[..., dict]]:
    """The ``loadgen`` and ``run`` sides of a script, on the driver and topic that
    ``target(**where)`` makes of the side's arguments (all but ``seconds`` and ``size``)."""

    def loop(seconds: float, size: int, **where: object) -> dict:
        return engine(*target(**where), seconds, size)

    def whole(seconds: float, size: int, **where: object) -> dict:
        return whole_run(*target(**where), seconds, size)

    return {"loadgen": loop, "run": whole}


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
    worker.start_load(UNREACHABLE_RATE, [bytes(size)], "NO_KEY")
    acked = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(1.0, seconds - elapsed))
        acked += worker.snapshot(0, 0, warmup=False).sent
    worker.stop_load(30)
    acked += worker.snapshot(0, 0, warmup=False).sent
    return measured(acked, start, cpu0)


def whole_run(spec: DriverSpec, topic: TopicSpec, seconds: float, size: int) -> dict:
    """What a user gets from ``loadgen run``: the CLI in a process of its own, producer-only on
    the parent's ``topic`` (``--existing-topics``: used as it is, left for the parent to
    remove), unthrottled for ``seconds`` with no warm-up, 1-s intervals, one process."""
    with tempfile.TemporaryDirectory(prefix="ab-run-") as scratch:
        folder = Path(scratch)
        workload = write_yaml(folder / "workload.yaml", producer_only(topic, seconds, size))
        driver = write_yaml(folder / "driver.yaml", driver_file(spec))
        command = [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload)]
        command += ["--existing-topics", topic.name, "--processes", "1", "--warmup", "0"]
        command += ["--duration", f"{seconds:g}s", "--stats-interval", "1s", "-q", "--no-report"]
        command += ["-o", str(folder / "out")]
        cpu0 = children_cpu_seconds()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        cpu_total = children_cpu_seconds() - cpu0
        result = json.loads(next((folder / "out").glob("*.json")).read_text())
    return run_measured(result, cpu_total)


def producer_only(topic: TopicSpec, seconds: float, size: int) -> dict:
    """The workload of the ``run`` side: one producer, no subscription (so no readiness probe),
    and a pool of one all-zero payload, the other sides' ``bytes(size)``."""
    return {
        "name": "ab-run",
        "topics": 1,
        "partitionsPerTopic": topic.partitions,
        "messageSize": size,
        "useRandomizedPayloads": True,
        "randomBytesRatio": 0.0,
        "randomizedPayloadPoolSize": 1,
        "subscriptionsPerTopic": 0,
        "producersPerTopic": 1,
        "producerRate": UNREACHABLE_RATE,
        "warmupDurationMinutes": 0,
        "testDurationMinutes": seconds / 60,
    }


def driver_file(spec: DriverSpec) -> dict:
    """``spec`` as a driver YAML: its name and driver, its config as the top-level keys."""
    return {"name": spec.name, "driver": spec.kind, **spec.config}


def write_yaml(path: Path, document: dict) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run_measured(result: dict, cpu_total: float) -> dict:
    """The ``run`` side's row from its result. With no warm-up and no probe, every message the
    run counts is in its measured phase: ``totalMessagesSent`` counts acknowledgements only
    (publish errors are counted apart), the exact measured count. ``seconds`` is the measured
    phase up to the last acknowledgement (``phaseSeconds``: measure + drain). ``cpu`` is
    ``clientCpu.cpuSeconds``, every thread of the run's processes over the measured intervals
    (the first one counts from the worker's creation, so the broker check, the topic check and
    the producers' creation are in it, imports not); ``cpu_total`` is the whole process tree,
    interpreter start-up and teardown included."""
    phases = result["run"]["phaseSeconds"]
    return {
        "acked": result["totalMessagesSent"],
        "seconds": phases["measure"] + phases["drain"],
        "cpu": result["clientCpu"]["cpuSeconds"],
        "cpu_total": cpu_total,
    }


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
    """One side in a fresh child; exits with the child's stderr when it fails."""
    done = subprocess.run(
        [sys.executable, script, "--child", side, json.dumps(kwargs)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"the {side} side failed (exit {done.returncode}):\n{done.stderr}")
    return per_message(json.loads(done.stdout.strip().splitlines()[-1]))


REFERENCE_ITERATIONS = 3_000_000


def reference(size: int) -> dict:
    """The Python-loop reference: per iteration, read the clock, pick the payload by index,
    call a no-op with both. The machine's speed swings between days; figures divided by it
    compare across them."""
    payloads = [bytes(size)]
    count = len(payloads)

    def no_op(_payload: bytes, _now: int) -> None:
        return None

    cpu0, start = cpu_seconds(), time.perf_counter()
    for index in range(REFERENCE_ITERATIONS):
        no_op(payloads[index % count], time.perf_counter_ns())
    return measured(REFERENCE_ITERATIONS, start, cpu0)


def reference_loop(script: str, args: argparse.Namespace) -> float:
    """ns of CPU per iteration of :func:`reference`, in a fresh child of ``script`` (which
    offers it as the side ``reference``), pinned as the sides are."""
    row = run_side(script, "reference", size=args.size, cpu=getattr(args, "cpu", None))
    return row["cpu_us_per_msg"] * 1000


def per_message(row: dict) -> dict:
    """``row`` (from :func:`measured` or :func:`run_measured`) with its rate and its CPU µs per
    message added (also with start-up and teardown, where the row has that CPU)."""
    row["rate"] = row["acked"] / row["seconds"]
    row["cpu_us_per_msg"] = row["cpu"] / max(row["acked"], 1) * 1e6
    if "cpu_total" in row:
        row["cpu_total_us_per_msg"] = row["cpu_total"] / max(row["acked"], 1) * 1e6
    return row


def parse_args(seconds: float, rounds: int) -> argparse.Namespace:
    """``--seconds`` per run, ``--rounds`` of every side, ``--size`` of each message, ``--cpu``,
    ``--sides`` to compare (ratios are to the first)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cpu", type=int, default=None, help="pin every side to this CPU")
    parser.add_argument(
        "--sides",
        type=side_list,
        default=SIDES,
        help=f"comma-separated, the first one the base of the ratios [{','.join(SIDES)}]",
    )
    return parser.parse_args()


def side_list(text: str) -> tuple[str, ...]:
    """``bare,run`` as a tuple of known sides, none twice."""
    sides = tuple(text.split(","))
    if set(sides) - set(SIDES) or len(set(sides)) != len(sides):
        raise argparse.ArgumentTypeError(f"{text!r}: distinct sides out of {', '.join(SIDES)}")
    return sides


def rotated(sides: tuple[str, ...], round_number: int) -> tuple[str, ...]:
    """The order of ``round_number``: each round starts one side later (ABC, BCA, CAB)."""
    shift = round_number % len(sides)
    return sides[shift:] + sides[:shift]


def alternate(
    script: str,
    args: argparse.Namespace,
    fresh_topic: Callable[[str], Callable[[], None]],
    **side_args: object,
) -> dict[str, list[dict]]:
    """Round after round, every side in :func:`rotated` order, each on a fresh topic:
    ``fresh_topic(name)`` makes it and returns what removes it. Prints each row as it comes;
    returns the rows by side, in round order."""
    rows: dict[str, list[dict]] = {side: [] for side in args.sides}
    for round_number in range(args.rounds):
        for side in rotated(args.sides, round_number):
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
        f"{row['cpu_us_per_msg']:6.2f} µs CPU/msg  ({row['acked']:,} acked, {row_detail(row)})",
        flush=True,
    )


def row_detail(row: dict) -> str:
    """The GC figures of a side measured in the child; the whole-tree CPU of a ``run`` side."""
    if "cpu_total" in row:
        return (
            f"{row['cpu_total_us_per_msg']:.2f} µs CPU/msg with start-up and teardown: "
            f"{row['cpu_total']:.2f} s for the tree, {row['cpu']:.2f} s measured"
        )
    return (
        f"{row['gc'] * 1000:.0f} ms in {row['collections']} GCs that freed {row['collected']:,}"
        " objects since start-up"
    )


def print_summary(rows: dict[str, list[dict]]) -> None:
    """Medians per side, then each side's per-round ratios to the first side."""
    for side, side_rows in rows.items():
        rate = statistics.median(r["rate"] for r in side_rows)
        cpu = statistics.median(r["cpu_us_per_msg"] for r in side_rows)
        total = median_total(side_rows)
        print(f"median {side:8} {rate:>10,.0f} msg/s  {cpu:.2f} µs CPU/msg{total}")
    base, *others = rows
    for side in others:
        print_ratios(f"{side}/{base}", rows[base], rows[side])


def median_total(side_rows: list[dict]) -> str:
    """The median CPU per message with start-up and teardown, for sides that have it."""
    if "cpu_total" not in side_rows[0]:
        return ""
    total = statistics.median(r["cpu_total_us_per_msg"] for r in side_rows)
    return f"  ({total:.2f} with start-up and teardown)"


def print_ratios(name: str, base: list[dict], side: list[dict]) -> None:
    pairs = list(zip(base, side, strict=True))
    ratios = [other["rate"] / first["rate"] for first, other in pairs]
    cpu = [other["cpu_us_per_msg"] / first["cpu_us_per_msg"] for first, other in pairs]
    print(
        f"throughput {name} per round {[f'{r:.3f}' for r in ratios]} "
        f"median {statistics.median(ratios):.3f}"
    )
    print(
        f"CPU per message {name} per round {[f'{r:.2f}' for r in cpu]} "
        f"median {statistics.median(cpu):.2f}"
    )
