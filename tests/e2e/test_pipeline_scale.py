"""The pipeline's per-line work runs in Spark's tasks, not in the job's driver.

One embedded Spark (local[2]) for the module. A set of many landing lines is ingested next to a
set of a few, in the same driver process: the driver's own CPU time (every thread of this
process: the ``foreachBatch`` callback runs here) may grow with the lines by only a small share
of what parsing and merging them costs, measured by running the very same task functions here.
If the parse or the merge ran in the driver, its CPU would grow by at least that much.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import loadgen
from loadgen.base import hdr
from loadgen.engine.stats import METRICS, IntervalStats
from loadgen.pipeline import ship
from loadgen.pipeline.ingest import IngestSettings, ingest
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.sink import BatchWriter
from loadgen.pipeline.tasks.merge import merge_partition
from loadgen.pipeline.tasks.parse import parse_batches

pytestmark = [pytest.mark.e2e, pytest.mark.pipeline]

DRIVER_SHARE = 0.2
"""The driver's extra CPU for the big set, at most this share of the tasks' CPU for it."""


def land_runs(landing: Path, runs: int, intervals: int) -> int:
    """``runs`` one-worker runs of ``intervals`` 1-s intervals (2,000 values each) and their
    end markers, landed as a run does; the number of landing lines."""
    rng = np.random.default_rng(runs)
    values = rng.lognormal(13, 1, 2000).astype(np.int64)
    histograms = {metric: hdr.record_ns(metric, values) for metric in METRICS}
    for run in range(runs):
        writer = LandingWriter(landing, RunIdentity(f"run-{run}", "w0", 1, "wl", "d", "memory", {}))
        for seq in range(intervals):
            start = 1_795_000_000_000 + seq * 1000
            writer.interval(IntervalStats(start, start + 1000, sent=2000, histograms=histograms))
        writer.end(incomplete=False, stop_reason=None)
    return runs * (intervals + 1) * len(METRICS)


def tasks_cpu_seconds(landing: Path) -> float:
    """What parsing and merging ``landing`` costs when this process runs the tasks itself."""
    paths = sorted(landing.iterdir())
    files = pa.RecordBatch.from_pydict(
        {"path": [p.as_uri() for p in paths], "content": [p.read_bytes() for p in paths]}
    )
    started = time.process_time()
    parsed = list(parse_batches(iter([files])))
    list(merge_partition(iter(parsed), now=1.0))
    return time.process_time() - started


def driver_cpu_seconds(spark, landing: Path, out: Path) -> float:
    settings = IngestSettings(str(landing), str(out), "local[2]", once=True, keep_landing=True)
    started = time.process_time()
    ingest(spark, settings, threading.Event())
    return time.process_time() - started


def test_the_driver_does_no_per_line_work_and_the_tables_are_exact(pipeline_spark, tmp_path):
    land_runs(tmp_path / "few", runs=1, intervals=4)
    lines = land_runs(tmp_path / "many", runs=40, intervals=30)
    driver_cpu_seconds(
        pipeline_spark, tmp_path / "few", tmp_path / "warm-up"
    )  # Python workers start
    few = driver_cpu_seconds(pipeline_spark, tmp_path / "few", tmp_path / "few-out")
    many = driver_cpu_seconds(pipeline_spark, tmp_path / "many", tmp_path / "many-out")
    tasks = tasks_cpu_seconds(tmp_path / "many")
    print(f"{lines} lines: driver +{many - few:.2f} s CPU, the tasks in one process {tasks:.2f} s")
    assert many - few < DRIVER_SHARE * tasks
    runs = ds.dataset(tmp_path / "many-out" / "runs", partitioning="hive").to_table()
    intervals = ds.dataset(tmp_path / "many-out" / "intervals", partitioning="hive").to_table()
    assert runs.num_rows == 40 * len(METRICS) and intervals.num_rows == 40 * 30 * len(METRICS)
    assert set(runs.column("count").to_pylist()) == {30 * 2000}
    assert set(runs.column("complete").to_pylist()) == {True}
    assert set(intervals.column("day").to_pylist()) == {"2026-11-18"}


def ingest_with_reader(spark, landing: Path, out: Path, *, tasks_read: bool) -> dict[str, list]:
    settings = IngestSettings(str(landing), str(out), "local[2]", once=True, keep_landing=True)
    ingest(spark, settings, threading.Event(), BatchWriter(str(out), read_local_files=tasks_read))
    tables = {}
    for name, columns in {
        "intervals": ["run_id", "metric", "seq", "count", "p99", "hist"],
        "runs": ["run_id", "metric", "count", "p999", "hist"],
        "quarantine": ["source_file", "reason"],
    }.items():
        rows = ds.dataset(out / name, partitioning="hive").to_table().select(columns).to_pylist()
        for row in rows:  # file:/x from Spark's reader, file:///x from the batch's record
            row.update(
                {"source_file": Path(row["source_file"]).name} if name == "quarantine" else {}
            )
        tables[name] = sorted(tuple(row.values()) for row in rows)
    return tables


def test_sparks_file_reader_and_the_tasks_own_give_the_same_tables(pipeline_spark, tmp_path):
    """Landing files on a file system other than ``file:`` are read by Spark's reader: the
    same rows, and the same quarantine for an empty file."""
    landing = tmp_path / "landing"
    land_runs(landing, runs=2, intervals=3)
    (landing / "zz-empty.json").write_bytes(b"")
    by_tasks = ingest_with_reader(pipeline_spark, landing, tmp_path / "tasks", tasks_read=True)
    by_spark = ingest_with_reader(pipeline_spark, landing, tmp_path / "spark", tasks_read=False)
    assert by_tasks == by_spark
    assert len(by_tasks["intervals"]) == 2 * 3 * len(METRICS)
    assert [name for name, _ in by_tasks["quarantine"]] == ["zz-empty.json"]
    assert "empty file" in by_tasks["quarantine"][0][1]


def loadgen_origin() -> str:
    return loadgen.__file__


def test_the_shipped_zip_stays_off_the_drivers_path(pipeline_spark):
    """PySpark adds a zip to the driver's path too: its stub loadgen would be what a process
    this one spawns imports (the Pravega driver's control process failed so)."""
    ship.ship_tasks(pipeline_spark)
    assert not [entry for entry in sys.path if ship.ARCHIVE in entry]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(loadgen_origin) == loadgen.__file__
