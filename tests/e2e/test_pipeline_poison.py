"""Bad landing input against the real Spark job: every kind is quarantined and the job goes on.

One SparkSession for the module. Each kind of bad input is landed next to one good interval
file, then the job is started on the same ``OUT`` — a restart of the job for every kind — and
ends once it has taken every file (``once``). So each step shows both that the kind is
quarantined with its file and reason, and that the restarted job does not replay an earlier
batch into a failure: it ends cleanly, and the good file of every step lands.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow.dataset as ds
import pytest

from loadgen.base import hdr
from loadgen.base.errors import ConfigError, LoadgenError
from loadgen.engine.stats import METRICS, IntervalStats
from loadgen.pipeline.ingest import IngestSettings, ingest
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.query import register_tables, run_sql
from loadgen.pipeline.sink import BatchWriter
from loadgen.pipeline.tables import QUARANTINED
from loadgen.pipeline.tasks.parse import MAX_LINE_BYTES

pytestmark = [pytest.mark.e2e, pytest.mark.pipeline]

RUN = "poison"


def good_interval(landing: Path, seq: int) -> Path:
    """Interval ``seq`` of a one-worker run: a file the job must take whatever lands next to it."""
    values = np.random.default_rng(seq).lognormal(13, 1, 200).astype(np.int64)
    stats = IntervalStats(
        seq * 1000,
        seq * 1000 + 1000,
        sent=200,
        histograms={metric: hdr.record_ns(metric, values) for metric in METRICS},
    )
    writer = LandingWriter(landing, RunIdentity(RUN, "w0", 1, "wl", "d", "memory", {}))
    writer.written = seq
    return writer.interval(stats)


def interval_line(landing: Path, **change: object) -> bytes:
    """A real landing line of another run, with ``change`` applied."""
    scratch = landing.parent / "scratch"
    scratch.mkdir(exist_ok=True)
    line = json.loads(good_interval(scratch, 999).read_text().splitlines()[0])
    return (json.dumps({**line, "run_id": "other", **change}) + "\n").encode()


POISON = {
    "invalid-utf8": lambda landing: b'{"kind": "interval", "run_id": "\xff\xfe"}\n',
    "nul-bytes": lambda landing: b'{"kind": "interval",\x00 "run_id": "x"}\n',
    "truncated-last-line": lambda landing: interval_line(landing)[:300],
    "empty": lambda landing: b"",
    "huge-line": lambda landing: b'{"pad": "' + b"x" * (10 * 2**20) + b'"}\n',
    "wrong-shape": lambda landing: b'[{"kind": "interval"}, 2, 3]\n{"kind": 7}\n',
    "undecodable-histogram": lambda landing: interval_line(landing, hist="SElTVEZBQUFBQ=="),
}
REASONS = {
    "invalid-utf8": "not UTF-8",
    "nul-bytes": "NUL byte",
    "truncated-last-line": "the last line has no newline",
    "empty": "empty file",
    "huge-line": f"limit {MAX_LINE_BYTES}",
    "wrong-shape": "JSON of the wrong shape",
    "undecodable-histogram": "histogram not readable",
    "still-being-written": "still being written",
    "vanished": "gone before it could be read",
}
KINDS = list(REASONS)


@dataclass
class Step:
    """What one restart of the job did with one kind of bad input."""

    file: str
    error: BaseException | None
    intervals: int
    quarantine: list[dict]
    out: Path


def read(out: Path, name: str) -> list[dict]:
    location = out / name
    if not location.is_dir():
        return []
    return ds.dataset(location, format="parquet", partitioning="hive").to_table().to_pylist()


def run_live(
    spark, settings: IngestSettings, writer: BatchWriter | None = None
) -> Exception | None:
    """The job, restarted on ``settings.out``, ended once it has taken every file."""
    try:
        ingest(spark, replace(settings, once=True), threading.Event(), writer)
    except LoadgenError as error:  # the step records it; the test of that kind fails on it
        return error
    return None


class DeletingAfterFirstBatch(BatchWriter):
    """Deletes ``doomed`` once the first batch is written: the next batch listed it before."""

    def __init__(self, out: str, doomed: Path) -> None:
        super().__init__(out)
        self.doomed = doomed

    def __call__(self, spark, batch_id: int, listed: list[str]) -> None:
        super().__call__(spark, batch_id, listed)
        self.doomed.unlink(missing_ok=True)


def run_vanishing(spark, settings: IngestSettings, landing: Path) -> Exception | None:
    """A file listed for one batch and deleted before it is read: ``once`` lists every file at
    its start and ``max_files`` leaves the newest (this one) to the second batch."""
    doomed = landing / "zz-vanished.json"
    doomed.write_bytes(interval_line(landing))
    later = time.time() + 60
    os.utime(doomed, (later, later))
    writer = DeletingAfterFirstBatch(settings.out, doomed)
    return run_live(spark, replace(settings, max_files=1), writer)


@pytest.fixture(scope="module")
def steps(pipeline_spark, tmp_path_factory) -> dict[str, Step]:
    base = tmp_path_factory.mktemp("poison")
    landing, out = base / "landing", base / "tables"
    landing.mkdir()
    settings = IngestSettings(str(landing), str(out), "local[2]", trigger_s=0.2)
    done: dict[str, Step] = {}
    seq = 0

    def record(kind: str, name: str, error: BaseException | None) -> None:
        rows = read(out, "quarantine")
        mine = [row for row in rows if Path(row["source_file"]).name == name]
        intervals = {r["seq"] for r in read(out, "intervals") if r["run_id"] == RUN}
        done[kind] = Step(name, error, len(intervals), mine, out)

    for kind, content in POISON.items():
        good_interval(landing, seq)
        seq += 1
        name = f"zz-{kind}.json"
        (landing / name).write_bytes(content(landing))
        record(kind, name, run_live(pipeline_spark, settings))

    good_interval(landing, seq)
    seq += 1
    writing = (landing / "zz-still-being-written.json").open("wb")
    writing.write(interval_line(landing)[:-40])
    writing.flush()
    record("still-being-written", Path(writing.name).name, run_live(pipeline_spark, settings))
    writing.write(b"the rest arrives after the job took the file\n")
    writing.close()

    good_interval(landing, seq)
    seq += 1
    record("vanished", "zz-vanished.json", run_vanishing(pipeline_spark, settings, landing))
    done["again"] = Step("", run_live(pipeline_spark, settings), seq, read(out, "quarantine"), out)
    return done


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_bad_input_is_quarantined_with_its_file_and_reason(steps, kind):
    step = steps[kind]
    assert step.error is None, f"the job failed on {kind}: {step.error}"
    assert step.quarantine, f"{kind}: nothing quarantined from {step.file}"
    assert all(REASONS[kind] in row["reason"] for row in step.quarantine), step.quarantine


@pytest.mark.parametrize("kind", KINDS)
def test_the_restarted_job_goes_on_after_each_kind(steps, kind):
    """Every step's good file landed: the restart after the bad input did not stop at it."""
    assert steps[kind].intervals == KINDS.index(kind) + 1


def test_a_last_restart_replays_nothing_and_quarantines_nothing_twice(steps):
    again = steps["again"]
    assert again.error is None
    files = [Path(row["source_file"]).name for row in again.quarantine]
    lines = [
        (f, r) for f, r in zip(files, (row["reason"] for row in again.quarantine), strict=True)
    ]
    assert len(lines) == len(set(lines))  # no batch was written twice
    assert set(files) >= {steps[kind].file for kind in REASONS}


def test_quarantined_files_are_copied_aside_with_their_reasons(steps):
    folder = steps["again"].out / QUARANTINED
    copies = {p.name: p for p in folder.rglob("zz-invalid-utf8.json*")}
    assert b"\xff\xfe" in copies["zz-invalid-utf8.json"].read_bytes()
    assert "not UTF-8" in copies["zz-invalid-utf8.json.reason"].read_text()
    vanished = next(folder.rglob("zz-vanished.json.reason")).read_text()
    assert "not copied" in vanished and "gone before it could be read" in vanished


def test_plain_pyspark_and_pyarrow_read_the_same_percentiles(steps, pipeline_spark):
    out = steps["again"].out
    columns = ["run_id", "metric", "seq", "p50", "p99", "p999", "max", "hist"]
    frame = pipeline_spark.read.parquet(str(out / "intervals")).select(*columns)
    from_spark = sorted(tuple(row) for row in frame.collect())
    from_arrow = sorted(tuple(row[c] for c in columns) for row in read(out, "intervals"))
    assert from_spark == from_arrow
    assert len(from_spark) == len(KINDS) * len(METRICS)


def test_sql_spark_rejects_is_a_config_error_with_sparks_message(steps, pipeline_spark):
    """What `loadgen pipeline query` turns into exit 2 (ConfigError) with Spark's own words."""
    register_tables(pipeline_spark, str(steps["again"].out))
    with pytest.raises(ConfigError, match=r"Spark rejected the query.*near 'SELEC'"):
        run_sql(pipeline_spark, "SELEC nothing FROM runs")
