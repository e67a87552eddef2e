"""The Spark pipeline as a user drives it: `run --pipeline`, `pipeline ingest`, `pipeline query`.

Spark runs embedded (local[*]) in the commands' own processes, as in the README, and on a real
standalone cluster (a master and a worker started from pyspark's ``spark-class`` on 127.0.0.1,
executors in their own processes): the equality and kill -9 tests run on both. The job's tasks
run in an executor Python that has numpy, pyarrow and pandas but no loadgen: the job ships the
tasks' code itself. Tables are read back with pyarrow: the job writes plain Parquet directories
(``day=…/batch=…``, a re-run batch replacing its own), so any Parquet reader sees exactly what
Spark committed.
"""

import json
import os
import re
import signal
import site
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from loadgen.base import hdr
from loadgen.base.errors import LoadgenError
from loadgen.engine.stats import END_TO_END, METRICS, PUBLISH, PUBLISH_DELAY, IntervalStats
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.local_cluster import start_spark_cluster, stop_cluster
from loadgen.pipeline.query import register_tables, run_sql
from loadgen.pytest_plugin.require import unavailable

pytestmark = [pytest.mark.e2e, pytest.mark.pipeline]

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
QUICKSTART = REPO / "configs/workloads/quickstart.yaml"
SUFFIXES = {"p50": "50pct", "p75": "75pct", "p95": "95pct", "p99": "99pct", "p999": "999pct"}
OMB_NAMES = {
    PUBLISH: "PublishLatency",
    PUBLISH_DELAY: "PublishDelayLatency",
    END_TO_END: "EndToEndLatency",
}


def loadgen(*args, timeout=180, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def table(out: Path, name: str) -> list[dict]:
    location = out / name
    if not location.is_dir():
        return []
    return ds.dataset(location, format="parquet", partitioning="hive").to_table().to_pylist()


def omb_value(metric: str, micros: int) -> float:
    """OMB's unit for ``metric``: µs integers for publish delay, ms floats for the others."""
    return micros if metric == PUBLISH_DELAY else micros / 1000.0


LOCAL = "local[*]"
STANDALONE = "standalone"
BOTH = pytest.mark.parametrize("master", [LOCAL, STANDALONE], indirect=True)


@pytest.fixture(scope="module")
def spark_cluster():
    """A standalone master and one worker (one core) for the module, stopped by process group."""
    try:
        cluster = start_spark_cluster(workers=1)
    except LoadgenError as error:  # no Java, no pyspark, a JVM that would not start
        unavailable(f"no Spark standalone cluster here: {error}")
    yield cluster
    stop_cluster(cluster)


@pytest.fixture(scope="module")
def master(request) -> str:
    """The ``--master`` of a test: embedded, or the module's standalone cluster."""
    if request.param == STANDALONE:
        return request.getfixturevalue("spark_cluster").address
    return request.param


@pytest.fixture(scope="module")
def python_without_loadgen(tmp_path_factory) -> str:
    """A Python for the executors that sees this one's site-packages but not loadgen: a venv
    whose ``.pth`` adds site-packages as a plain path, so the ``.pth`` files in it (the
    editable install of loadgen among them) are not run."""
    venv = tmp_path_factory.mktemp("executor-python")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site_packages) / "host.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    probe = "import numpy, pyarrow, pandas, pyspark\ntry: import loadgen\nexcept: print('none')"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=venv)
    assert done.stdout.strip() == "none", done.stdout + done.stderr
    return str(python)


@pytest.fixture(scope="module")
def landed_run(tmp_path_factory):
    """A 3-s memory run landed for the pipeline, plus two bad files: (result, landing)."""
    base = tmp_path_factory.mktemp("pipeline")
    landing, results = base / "landing", base / "results"
    done = loadgen(
        "run", "-d", MEMORY, QUICKSTART,
        "--duration", "3s", "--warmup", "1s", "--stats-interval", "1s", "--plain",
        "--no-report", "--pipeline", landing, "-o", results,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (landing / "zz-garbage.json").write_text("this is not json\n")
    second = next(landing.glob("*-000001.json"))
    line = json.loads(second.read_text().splitlines()[0])
    bad = {**line, "run_id": "other", "hist": "bm9wZQ=="}
    (landing / "zz-bad-histogram.json").write_text(json.dumps(bad) + "\n")
    (result_path,) = results.glob("*.json")
    return json.loads(result_path.read_text()), landing


@pytest.fixture(scope="module")
def ingested_run(landed_run, tmp_path_factory, master, python_without_loadgen):
    """The landed run ingested once on ``master``, the tasks in a Python without loadgen:
    (result, tables, the job's stderr)."""
    result, landed = landed_run
    out = tmp_path_factory.mktemp("tables")
    executors = {**os.environ, "PYSPARK_PYTHON": python_without_loadgen}
    ingest = loadgen("pipeline", "ingest", landed, "--out", out, "--once", "--keep-landing",
                     "--master", master, env=executors, cwd=out)  # fmt: skip
    assert ingest.returncode == 0, ingest.stderr
    return result, out, ingest.stderr


@BOTH
def test_spark_percentiles_equal_the_result_json_exactly(ingested_run):
    result, out, _ = ingested_run
    run_id = result["run"]["runId"]
    runs = {row["metric"]: row for row in table(out, "runs") if row["run_id"] == run_id}
    intervals = [row for row in table(out, "intervals") if row["run_id"] == run_id]
    assert sorted(runs) == sorted(METRICS)
    for metric, name in OMB_NAMES.items():
        run = runs[metric]
        assert run["complete"] is True
        assert run["hist"] == result["histograms"][metric]["aggregated"]
        for column, suffix in SUFFIXES.items():
            assert omb_value(metric, run[column]) == result[f"aggregated{name}{suffix}"]
        assert omb_value(metric, run["max"]) == result[f"aggregated{name}Max"]
        measured = sorted(
            (row for row in intervals if row["metric"] == metric and not row["warmup"]),
            key=lambda row: row["seq"],
        )
        assert len(measured) == len(result[f"{name[0].lower()}{name[1:]}99pct"])
        for i, row in enumerate(measured):
            assert row["hist"] == result["histograms"][metric]["periods"][i]
            for column, suffix in SUFFIXES.items():
                listed = result[f"{name[0].lower()}{name[1:]}{suffix}"][i]
                assert omb_value(metric, row[column]) == listed
    warmups = [row for row in intervals if row["warmup"]]
    assert warmups and all(row["metric"] in METRICS for row in warmups)


@BOTH
def test_counts_and_rates_in_the_tables_add_up_to_the_result(ingested_run):
    result, out, _ = ingested_run
    run_id = result["run"]["runId"]
    publish = next(
        row for row in table(out, "runs") if row["run_id"] == run_id and row["metric"] == PUBLISH
    )
    assert publish["intervals"] == len(result["publishRate"])
    assert (
        publish["count"] == hdr.decode(PUBLISH, result["histograms"][PUBLISH]["aggregated"]).total
    )
    measured = sorted(
        (
            row
            for row in table(out, "intervals")
            if row["run_id"] == run_id and row["metric"] == PUBLISH and not row["warmup"]
        ),
        key=lambda row: row["seq"],
    )
    assert publish["sent"] == sum(row["sent"] for row in measured)
    # a rate is the interval's count over its own length, which is only nominally 1 s
    rates = [row["sent"] * 1000 / (row["interval_end"] - row["interval_start"]) for row in measured]
    assert rates == pytest.approx(result["publishRate"], rel=0.01)
    assert publish["sent"] < result["totalMessagesSent"]  # the warm-up is in the total only
    assert publish["workload"] == result["workload"] and publish["driver"] == result["driver"]
    assert json.loads(publish["meta"])["workload"]["producerRate"] == 10000


@BOTH
def test_bad_landing_files_are_quarantined_reported_and_lose_nothing_else(ingested_run):
    result, out, stderr = ingested_run
    quarantined = {Path(row["source_file"]).name: row for row in table(out, "quarantine")}
    assert sorted(quarantined) == ["zz-bad-histogram.json", "zz-garbage.json"]
    assert quarantined["zz-garbage.json"]["raw"] == "this is not json"
    assert "histogram not readable" in quarantined["zz-bad-histogram.json"]["reason"]
    assert "quarantined a line of" in stderr and "zz-garbage.json" in stderr
    assert not [row for row in table(out, "runs") if row["run_id"] == "other"]
    runs = [r for r in table(out, "runs") if r["run_id"] == result["run"]["runId"]]
    assert len(runs) == len(METRICS)  # a row per metric


@pytest.mark.parametrize("master", [LOCAL], indirect=True)
def test_the_ready_reports_and_sql_go_through_spark(ingested_run):
    result, out, _ = ingested_run
    done = loadgen("pipeline", "query", out, "--report", "runs", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert row["run_id"] == result["run"]["runId"]
    assert row["p99_ms"] == round(result["aggregatedEndToEndLatency99pct"], 3)
    # SQL Spark rejects: tests/e2e/test_pipeline_poison.py, on its shared session


def documented_queries() -> list[str]:
    """The SQL of each `loadgen pipeline query tables "..."` example in docs/pipeline.md."""
    text = (REPO / "docs" / "pipeline.md").read_text()
    return re.findall(r'loadgen pipeline query tables "([^"]+)"', text)


@pytest.mark.parametrize("master", [LOCAL], indirect=True)
def test_the_documented_queries_run_on_the_tables(ingested_run, pipeline_spark):
    """As `loadgen pipeline query` runs them (the CLI itself: the ready-report test above)."""
    result, out, _ = ingested_run
    run_id = result["run"]["runId"]
    last_week, one_run = documented_queries()
    register_tables(pipeline_spark, str(out))
    (row,) = run_sql(pipeline_spark, last_week).collect()
    assert row["run_id"] == run_id
    assert row["p99_ms"] == round(result["aggregatedEndToEndLatency99pct"], 3)
    rows = run_sql(pipeline_spark, one_run.replace("RUN_ID", run_id)).collect()
    measured = [row["p99_ms"] for row in rows if not row["warmup"]]
    assert measured == [round(v, 3) for v in result["endToEndLatency99pct"]]


@pytest.mark.parametrize("master", [LOCAL], indirect=True)
def test_duckdb_reads_the_tables_and_every_file_is_sorted_by_run(ingested_run):
    """DuckDB sees what pyarrow sees, partition columns included; each file is sorted by run,
    metric (and seq) with min/max statistics, what lets a reader skip other runs' row groups."""
    result, out, _ = ingested_run
    run_id = result["run"]["runId"]
    query = (
        "SELECT metric, count, p99, day FROM read_parquet(?, hive_partitioning = true)"
        " WHERE run_id = ? ORDER BY metric"
    )
    by_duckdb = duckdb.connect().execute(query, [f"{out}/runs/*/*/*.parquet", run_id]).fetchall()
    by_arrow = sorted(
        (row["metric"], row["count"], row["p99"], row["day"])
        for row in table(out, "runs")
        if row["run_id"] == run_id
    )
    assert [(m, c, p, str(d)) for m, c, p, d in by_duckdb] == by_arrow
    assert len(by_arrow) == len(METRICS)
    for path in (out / "intervals").rglob("*.parquet"):
        parquet = pq.ParquetFile(path)
        keys = parquet.read(columns=["run_id", "metric", "seq"]).to_pylist()
        assert keys == sorted(keys, key=lambda k: (k["run_id"], k["metric"], k["seq"]))
        column = parquet.schema_arrow.get_field_index("run_id")
        for group in range(parquet.metadata.num_row_groups):
            assert parquet.metadata.row_group(group).column(column).statistics.has_min_max


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["query", "{missing}", "--report", "runs"], "TABLES"),
        (["query", "{missing}", "SELECT 1", "--report", "runs"], "either SQL or --report"),
        (["query", "{missing}", "--report", "timeline"], "--run"),
        (["ingest", "{missing}", "--out", "{missing}", "--conf", "spark.x"], "KEY=VALUE"),
        (["ingest", "{missing}", "--out", "{missing}", "--trigger", "soon"], "--trigger"),
    ],
)
def test_bad_pipeline_input_exits_2_before_spark_starts(tmp_path, args, named):
    started = time.monotonic()
    done = loadgen("pipeline", *(a.format(missing=tmp_path / "nothing") for a in args))
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert time.monotonic() - started < 5


def test_a_landing_directory_that_cannot_be_created_exits_2(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = loadgen(
        "run", "-d", MEMORY, QUICKSTART,
        "--duration", "1s", "--pipeline", blocker / "landing", "-o", tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "pipeline" in done.stderr and "a writable directory" in done.stderr
    assert not list(tmp_path.glob("*.json"))


WORKERS = 2
INTERVALS = 20


def land_two_workers(landing: Path, pace_s: float) -> None:
    """Two workers of one run landing INTERVALS intervals each, then their end markers."""
    writers = [
        LandingWriter(landing, RunIdentity("killed", f"w{n}", WORKERS, "wl", "d", "memory", {}))
        for n in range(WORKERS)
    ]
    rng = np.random.default_rng(7)
    for seq in range(INTERVALS):
        for writer in writers:
            values = rng.lognormal(13, 1, 1000).astype(np.int64)
            histograms = {metric: hdr.record_ns(metric, values) for metric in METRICS}
            writer.interval(
                IntervalStats(seq * 1000, seq * 1000 + 1000, sent=1000, histograms=histograms)
            )
        time.sleep(pace_s)
    for writer in writers:
        writer.end(incomplete=False, stop_reason=None)


def wait_for_line(process: subprocess.Popen, text: str) -> None:
    for line in process.stderr:
        if text in line:
            return
    raise AssertionError(f"the ingest job ended before saying {text!r}")


@pytest.mark.parametrize("master", [STANDALONE], indirect=True)  # local[*] runs the same code
def test_a_job_killed_mid_stream_resumes_and_every_interval_lands_exactly_once(tmp_path, master):
    landing, out = tmp_path / "landing", tmp_path / "tables"
    landing.mkdir()
    writer = threading.Thread(target=land_two_workers, args=(landing, 0.4))
    live = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loadgen",
            "pipeline",
            "ingest",
            landing,
            "--out",
            out,
            "--trigger",
            "1s",
            "--master",
            master,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_line(live, "watching")  # Spark is up: the landing starts while it watches
        writer.start()
        wait_for_line(live, "INFO loadgen.pipeline: batch")  # a committed batch, then a moment
        time.sleep(1.3)
        os.killpg(live.pid, signal.SIGKILL)  # the driver and its JVM
        live.wait(timeout=30)
    finally:
        if live.poll() is None:
            os.killpg(live.pid, signal.SIGKILL)
        writer.join()
    partial = table(out, "intervals")
    assert 0 < len(partial) < WORKERS * INTERVALS * len(METRICS)
    again = loadgen("pipeline", "ingest", landing, "--out", out, "--once", "--master", master)
    assert again.returncode == 0, again.stderr
    rows = table(out, "intervals")
    keys = [(row["metric"], row["seq"]) for row in rows]
    assert len(keys) == len(set(keys)) == INTERVALS * len(METRICS)
    assert all(row["count"] == 2000 and row["workers_reported"] == 2 for row in rows)
    runs = table(out, "runs")
    assert sorted(row["metric"] for row in runs) == sorted(METRICS)
    assert all(row["count"] == 2000 * INTERVALS and row["complete"] for row in runs)
    assert table(out, "quarantine") == []


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """The bin folder of a Python with nothing installed (no numpy, pyarrow or pandas)."""
    venv = tmp_path_factory.mktemp("bare-python")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    return venv / "bin"


def test_a_local_job_runs_its_tasks_in_loadgens_python_not_the_python3_on_path(
    tmp_path, bare_python
):
    """loadgen run by its full path (pipx, systemd, cron) with another python3 first on PATH;
    the ready report says which metric its latencies are."""
    landing, out = tmp_path / "landing", tmp_path / "tables"
    land_two_workers(landing, 0.0)
    path = f"{bare_python}{os.pathsep}{os.environ['PATH']}"
    elsewhere = {**{k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}, "PATH": path}
    done = loadgen("pipeline", "ingest", landing, "--out", out, "--once", env=elsewhere)
    assert done.returncode == 0, done.stderr
    assert sorted(row["metric"] for row in table(out, "runs")) == sorted(METRICS)
    report = loadgen(
        "pipeline", "query", out, "--report", "runs", "--metric", PUBLISH, "--json", env=elsewhere
    )
    assert report.returncode == 0, report.stderr
    rows = [json.loads(line) for line in report.stdout.splitlines()]
    assert [(row["run_id"], row["metric"]) for row in rows] == [("killed", PUBLISH)]


def test_a_module_missing_from_the_executors_python_is_named_in_one_line(tmp_path, bare_python):
    landing, out = tmp_path / "landing", tmp_path / "tables"
    land_two_workers(landing, 0.0)
    executors = {**os.environ, "PYSPARK_PYTHON": str(bare_python / "python")}
    done = loadgen("pipeline", "ingest", landing, "--out", out, "--once", env=executors)
    assert done.returncode == 1, done.stderr
    *_, line = done.stderr.splitlines()  # after the local executor's own log of the failure
    assert line.startswith("error: the ingest job failed in batch 0: the executors' Python")
    assert f"({bare_python / 'python'}) has no module 'pyarrow'" in line
    assert "pip install numpy pyarrow pandas" in line
