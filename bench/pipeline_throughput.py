"""How many landing lines a second ``loadgen pipeline ingest`` merges, per Spark master.

Usage: python bench/pipeline_throughput.py [--runs 200] [--masters local[1] local[2]]
       [--rounds 3] [--max-files N] [--standalone N] [--code NAME=SRC ...]

1. One real run lands its intervals: the memory driver, 2,000 msg/s, 30 s, 1-s stats intervals,
   no warm-up (cached in ``--cache`` and reused): 30 interval files and an end file, 5 lines each
   (one per metric), histograms of ~2,000 values.
2. Its landing files are fanned out into ``--runs`` runs: the same lines under new run ids, as
   docs/formats/landing.md lays them out (``--runs 200``: 31,000 lines in 6,200 files).
3. Per round and master (the masters' order alternates between rounds): ``ingest --once
   --keep-landing`` of a 1-run set and of the fanned-out set, each from a cold start into a
   new ``--out``. lines/s = the set's lines over (its time minus the 1-run set's time), so the
   JVM's and Spark's start-up are not counted. While the big set runs, the process tree is
   sampled every 0.2 s: peak memory of the driver (its Python and its JVM) and of the Python
   workers that run the tasks, and the driver Python's own CPU time.

``--warm N`` measures instead inside one Spark session per code and master (a child process):
after a warm-up (the 1-run set twice, the big set once), N rounds of the 1-run set and the big
set, each into a new ``--out``; lines/s = the set's lines over the difference of the two times,
and the process tree's CPU (driver, JVM, Python workers) per line over the same difference.
Without the cold starts in both terms, it is the steadier figure for comparing code in the same
run (the cold difference swings by ±3 s on this machine).

``--standalone N`` adds a master ``standalone``: a Spark master and N one-core workers on
127.0.0.1 from pyspark's ``spark-class`` (as ``loadgen brokers up spark``). ``--code before=
/old/checkout/src after=src`` runs the ingest of each named source tree (its ``PYTHONPATH``) on
every master in every round, so the trees are compared in the same run.
Prints one line per measurement and a summary: the median lines/s per code and master, and the
ratio of each median to the first's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = """name: pipeline-source
topics: 1
partitionsPerTopic: 4
messageSize: 256
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 2000
testDurationMinutes: 0.5
warmupDurationMinutes: 0
"""


def source_run(cache: Path) -> Path:
    """The landing directory of one real 30-s run (made once, then reused)."""
    landing = cache / "landing"
    if landing.is_dir() and any(landing.glob("*-end.json")):
        return landing
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    (cache / "workload.yaml").write_text(WORKLOAD)
    subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", REPO / "configs/drivers/memory.yaml",
         cache / "workload.yaml", "--stats-interval", "1s", "--plain", "--no-report",
         "--pipeline", landing, "-o", cache / "results"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return landing


def fan_out(source: Path, target: Path, runs: int) -> int:
    """``runs`` copies of the source run's landing files under new run ids; lines written."""
    target.mkdir(parents=True, exist_ok=True)
    files = sorted(source.glob("*.json"))
    run_id = json.loads(files[0].read_text().splitlines()[0])["run_id"]
    lines = 0
    for copy in range(runs):
        new_id = f"{run_id}-{copy:06d}"
        for path in files:
            text = path.read_text().replace(f'"run_id": "{run_id}"', f'"run_id": "{new_id}"')
            (target / path.name.replace(run_id, new_id)).write_text(text)
            lines += text.count("\n")
    return lines


WARM = """
import json, shutil, sys, tempfile, threading, time
import psutil
from loadgen.pipeline.ingest import IngestSettings, ingest
from loadgen.pipeline.spark import start_session

one, many, master, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spark = start_session(master, "pipeline throughput, warm")
tree = psutil.Process()


def cpu_seconds():
    total = 0.0
    for process in [tree, *tree.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def timed(landing):
    out = tempfile.mkdtemp(prefix="loadgen-throughput-out-")
    settings = IngestSettings(landing, out, master, once=True, keep_landing=True)
    cpu, started = cpu_seconds(), time.perf_counter()
    ingest(spark, settings, threading.Event())
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    shutil.rmtree(out)
    return seconds, cpu


for landing in (one, one, many):
    timed(landing)
found = [[*timed(one), *timed(many)] for _ in range(rounds)]
spark.stop()
print(json.dumps(found))
"""


def warm_rounds(
    one: Path, many: Path, master: str, rounds: int, env: dict[str, str]
) -> list[tuple[float, float, float, float]]:
    """(1-run set seconds, its CPU seconds, big set seconds, its CPU seconds) per round, in one
    warm Spark session."""
    done = subprocess.run(
        [sys.executable, "-c", WARM, one, many, master, str(rounds)],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"warm ingest on {master} failed:\n{done.stderr[-3000:]}")
    return [tuple(row) for row in json.loads(done.stdout.splitlines()[-1])]


@dataclass
class Peaks:
    """The highest memory seen, MiB, and the driver Python's CPU seconds at the end."""

    driver_python_mib: float = 0.0
    jvm_mib: float = 0.0
    python_workers_mib: float = 0.0
    driver_cpu_s: float = 0.0


def sample(process: psutil.Popen, peaks: Peaks, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        try:
            tree = process.children(recursive=True)
            peaks.driver_python_mib = max(
                peaks.driver_python_mib, process.memory_info().rss / 2**20
            )
            cpu = process.cpu_times()
            peaks.driver_cpu_s = cpu.user + cpu.system
        except psutil.NoSuchProcess:
            return
        jvm = workers = 0.0
        for member in tree:
            try:
                name, rss = member.name(), member.memory_info().rss / 2**20
            except psutil.NoSuchProcess:
                continue
            if name == "java":
                jvm += rss
            elif name.startswith("python"):
                workers += rss
        peaks.jvm_mib = max(peaks.jvm_mib, jvm)
        peaks.python_workers_mib = max(peaks.python_workers_mib, workers)


def ingest(
    landing: Path, master: str, max_files: int | None, env: dict[str, str]
) -> tuple[float, Peaks]:
    out = Path(tempfile.mkdtemp(prefix="loadgen-throughput-out-"))
    command = [sys.executable, "-m", "loadgen", "pipeline", "ingest", landing, "--out", out,
               "--once", "--keep-landing", "--master", master]  # fmt: skip
    if max_files:
        command += ["--max-files", str(max_files)]
    peaks, stop = Peaks(), threading.Event()
    started = time.perf_counter()
    process = psutil.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    sampler = threading.Thread(target=sample, args=(process, peaks, stop))
    sampler.start()
    _, stderr = process.communicate()
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    shutil.rmtree(out, ignore_errors=True)
    if process.returncode != 0:
        raise SystemExit(f"ingest on {master} failed:\n{stderr[-3000:]}")
    return seconds, peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-files", type=int)
    parser.add_argument("--standalone", type=int, default=0, metavar="WORKERS")
    parser.add_argument("--warm", type=int, default=0, metavar="ROUNDS")
    parser.add_argument("--code", nargs="+", default=[f"this={REPO / 'src'}"], metavar="NAME=SRC")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "loadgen-pipeline-source"
    )
    args = parser.parse_args()

    source = source_run(args.cache)
    base = Path(tempfile.mkdtemp(prefix="loadgen-throughput-"))
    one, many = base / "one", base / "many"
    fan_out(source, one, 1)
    lines = fan_out(source, many, args.runs)
    print(f"fanned out: {args.runs} runs, {lines} lines in {len(list(many.iterdir()))} files")

    masters = list(args.masters)
    cluster = None
    if args.standalone:
        sys.path.insert(0, str(REPO / "src"))
        from loadgen.pipeline.local_cluster import start_spark_cluster

        cluster = start_spark_cluster(workers=args.standalone)
        masters.append(cluster.address)
    codes = dict(item.split("=", 1) for item in args.code)
    runs = [(code, master) for master in masters for code in codes]
    rates: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    cpu: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
    try:
        for round_number in range(args.rounds):
            for code, master in runs if round_number % 2 == 0 else runs[::-1]:
                env = {**os.environ, "PYTHONPATH": str(Path(codes[code]).resolve())}
                if args.warm:
                    for small, small_cpu, big, big_cpu in warm_rounds(
                        one, many, master, args.warm, env
                    ):
                        rates[(code, master)].append(lines / max(big - small, 1e-9))
                        cpu[(code, master)].append((big_cpu - small_cpu) / lines * 1e6)
                        print(
                            f"round {round_number} {code} {master}, warm: {big:.2f} s"
                            f" - 1-run set {small:.2f} s = {rates[(code, master)][-1]:,.0f}"
                            f" lines/s; CPU {cpu[(code, master)][-1]:.0f} µs a line",
                            flush=True,
                        )
                    continue
                start_up, _ = ingest(one, master, args.max_files, env)
                seconds, peaks = ingest(many, master, args.max_files, env)
                rate = lines / max(seconds - start_up, 1e-9)
                rates[(code, master)].append(rate)
                print(
                    f"round {round_number} {code} {master}: {seconds:.1f} s"
                    f" - start-up {start_up:.1f} s"
                    f" = {rate:,.0f} lines/s; peak MiB: driver Python"
                    f" {peaks.driver_python_mib:.0f},"
                    f" JVM {peaks.jvm_mib:.0f}, Python workers {peaks.python_workers_mib:.0f};"
                    f" driver Python CPU {peaks.driver_cpu_s:.1f} s",
                    flush=True,
                )
    finally:
        if cluster is not None:
            from loadgen.pipeline.local_cluster import stop_cluster

            stop_cluster(cluster)
        shutil.rmtree(base, ignore_errors=True)
    first = statistics.median(rates[runs[0]])
    for code, master in runs:
        median = statistics.median(rates[(code, master)])
        per_line = (
            f", CPU {statistics.median(cpu[(code, master)]):.0f} µs a line" if args.warm else ""
        )
        print(
            f"median {code} {master}: {median:,.0f} lines/s{per_line},"
            f" x{median / first:.2f} of {' '.join(runs[0])}"
        )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
