"""What the live Spark ingest costs next to a run, and how far behind the run its tables are.

Usage: python bench/pipeline_cost.py [--triggers 1 5] [--rounds 2] [--seconds 60]
       [--code NAME=SRC ...] [--standalone]

Per round and trigger: starts ``loadgen pipeline ingest LANDING --out TABLES --trigger T``
(embedded local[*], or with ``--standalone`` on a master and one worker started from pyspark's
``spark-class`` on 127.0.0.1 — then the cluster's JVMs and executors count as the ingest's CPU
too), waits until it watches, measures its CPU while it watches an empty landing directory for
15 s (``idle_cores``), then runs ``loadgen run`` on the in-process memory
broker (10k msg/s of 1 KiB, 1-s stats intervals, ``--pipeline LANDING``) for ``--seconds``.
Reports, over the run's wall time: CPU cores used by the ingest's whole process tree (driver
Python, JVM, Spark's Python workers) and by the run, and the lag of each interval row (merged_at
minus the interval's end; it includes the one interval the feed holds back). Then the time of an
after-the-run ``ingest --once`` of the same landing files from a cold start. Both jobs keep
their landing files (``--keep-landing``) so the second can read them again.

``--code before=/old/checkout/src after=src`` runs the ingest of each named source tree (its
``PYTHONPATH``) in turn within every round — A/B interleaved, so machine load hits both alike;
the run itself always uses this checkout.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pyarrow.dataset as ds

REPO = Path(__file__).resolve().parents[1]


def tree_cpu_seconds(process: psutil.Process) -> float:
    total = 0.0
    for member in [process, *process.children(recursive=True)]:
        try:
            times = member.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def cluster_cpu_seconds(pids: list[int]) -> float:
    """The standalone cluster's JVMs and everything under them (the executors)."""
    total = 0.0
    for pid in pids:
        try:
            total += tree_cpu_seconds(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    return total


def code_env(src: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(src).resolve())}


def start_ingest(
    landing: Path, tables: Path, trigger: float, master: str, env: dict[str, str]
) -> subprocess.Popen:
    live = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "pipeline", "ingest", str(landing), "--out",
         str(tables), "--trigger", f"{trigger}s", "--keep-landing", "--master", master],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )  # fmt: skip
    assert live.stderr is not None
    for line in live.stderr:
        if "watching" in line:
            return live
    raise RuntimeError("the ingest job never started watching")


def run_load(landing: Path, results: Path, seconds: int) -> tuple[float, float]:
    """The run's (wall seconds, CPU seconds)."""
    started = time.perf_counter()
    run = psutil.Popen(
        [sys.executable, "-m", "loadgen", "run", "-d", str(REPO / "configs/drivers/memory.yaml"),
         str(REPO / "configs/workloads/quickstart.yaml"), "--duration", f"{seconds}s",
         "--warmup", "0", "--stats-interval", "1s", "--plain", "--no-report",
         "--pipeline", str(landing), "-o", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    cpu = 0.0
    while run.poll() is None:
        cpu = tree_cpu_seconds(run)
        time.sleep(0.2)
    return time.perf_counter() - started, cpu


def lags(tables: Path) -> list[float]:
    rows = ds.dataset(tables / "intervals", partitioning="hive").to_table().to_pylist()
    return [
        row["merged_at"] - row["interval_end"] / 1000 for row in rows if row["metric"] == "publish"
    ]


IDLE_S = 15
"""How long the live job watches an empty landing directory before the run starts."""


def one_round(
    trigger: float, seconds: int, master: str, cluster: list[int], env: dict[str, str]
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        landing, tables = base / "landing", base / "tables"
        live = start_ingest(landing, tables, trigger, master, env)
        ingest = psutil.Process(live.pid)
        idle_before = tree_cpu_seconds(ingest) + cluster_cpu_seconds(cluster)
        time.sleep(IDLE_S)  # watching an empty landing directory
        before = tree_cpu_seconds(ingest) + cluster_cpu_seconds(cluster)
        wall, run_cpu = run_load(landing, base / "results", seconds)
        after = tree_cpu_seconds(ingest) + cluster_cpu_seconds(cluster)
        time.sleep(trigger + 3)  # the last interval and the end marker
        os.killpg(live.pid, signal.SIGINT)
        live.wait(timeout=60)
        lag = lags(tables)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "loadgen", "pipeline", "ingest", str(landing),
             "--out", str(base / "again"), "--once", "--keep-landing", "--master", master],
            check=True, capture_output=True, env=env,
        )  # fmt: skip
        once = time.perf_counter() - started
    return {
        "idle_cores": (before - idle_before) / IDLE_S,
        "ingest_cores": (after - before) / wall,
        "run_cores": run_cpu / wall,
        "lag_p50": statistics.median(lag),
        "lag_max": max(lag),
        "once_s": once,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=float, nargs="+", default=[1.0, 5.0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--code", nargs="+", default=[f"this={REPO / 'src'}"], metavar="NAME=SRC")
    parser.add_argument("--standalone", action="store_true", help="a local standalone cluster")
    args = parser.parse_args()
    codes = dict(item.split("=", 1) for item in args.code)
    master, pids, cluster = "local[*]", [], None
    if args.standalone:
        from loadgen.pipeline.local_cluster import start_spark_cluster, stop_cluster

        cluster = start_spark_cluster(workers=1)
        master, pids = cluster.address, [cluster.pid, *cluster.helper_pids]
    try:
        for trigger in args.triggers:
            rounds: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
            for number in range(1, args.rounds + 1):
                for name, src in codes.items():  # interleaved: A, B, A, B, ...
                    numbers = one_round(trigger, args.seconds, master, pids, code_env(src))
                    rounds[name].append(numbers)
                    print(f"{name} trigger {trigger:g}s round {number}: " + _fmt(numbers))
            for name, results in rounds.items():
                medians = {k: statistics.median(r[k] for r in results) for k in results[0]}
                print(f"{name} trigger {trigger:g}s median: " + _fmt(medians), flush=True)
    finally:
        if cluster is not None:
            stop_cluster(cluster)


def _fmt(numbers: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in numbers.items())


if __name__ == "__main__":
    main()
