"""The job's own streaming source: which files each micro-batch takes, across restarts.

The record under ``OUT/_checkpoint`` goes through Hadoop's FileSystem, so these tests use the
module's embedded Spark (its JVM) for it; the batches themselves run only where a test says so.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from loadgen.base.errors import ConfigError
from loadgen.engine.stats import METRICS, IntervalStats
from loadgen.pipeline import source as source_module
from loadgen.pipeline.hadoop_fs import HadoopFiles
from loadgen.pipeline.ingest import IngestSettings, batches, ingest
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.sink import BatchWriter, same_file
from loadgen.pipeline.source import LandingSource, list_landing

pytestmark = [pytest.mark.e2e, pytest.mark.pipeline]


def land(landing: Path, name: str, age_s: float) -> str:
    """A file ``age_s`` seconds old (the source takes the oldest first); its URI."""
    path = landing / name
    path.write_text("{}\n")
    when = time.time() - age_s
    os.utime(path, (when, when))
    return path.as_uri()


def open_source(spark, tmp_path: Path, *, keep: bool = True) -> LandingSource:
    """The source as a job starting (or restarting) on ``tmp_path/out`` opens it."""
    out = tmp_path / "out"
    landed = None if keep else str(out / "_landed")
    return LandingSource(
        str(tmp_path / "landing"), str(out / "_checkpoint"), HadoopFiles(spark), landed=landed
    )


def settings(tmp_path: Path, **change) -> IngestSettings:
    base = IngestSettings(str(tmp_path / "landing"), str(tmp_path / "out"), "local[2]", once=True)
    return replace(base, **change)


@pytest.fixture
def landing(tmp_path) -> Path:
    folder = tmp_path / "landing"
    folder.mkdir()
    return folder


def test_files_are_taken_oldest_first_in_steps_and_hidden_names_never(
    pipeline_spark, tmp_path, landing
):
    third, first, second = (land(landing, n, age) for n, age in [("a", 10), ("b", 30), ("c", 20)])
    land(landing, ".being-written.json", 40)
    land(landing, "_SUCCESS", 40)
    source = open_source(pipeline_spark, tmp_path)
    taken = []
    for batch_id, uris in batches(source, settings(tmp_path, max_files=2), threading.Event()):
        taken.append((batch_id, uris))
        source.finish(batch_id, uris)
    assert taken == [(0, [first, second]), (1, [third])]


def test_a_batch_cut_short_runs_again_first_on_the_same_files(pipeline_spark, tmp_path, landing):
    old = [land(landing, name, 30) for name in ("a", "b")]
    source = open_source(pipeline_spark, tmp_path)
    assert source.start(source.new_files()) == 0  # recorded; the job dies before it is done
    newer = land(landing, "c", 10)
    restarted = open_source(pipeline_spark, tmp_path)
    taken = []
    for batch_id, uris in batches(restarted, settings(tmp_path), threading.Event()):
        taken.append((batch_id, sorted(uris)))
        restarted.finish(batch_id, uris)
    assert taken == [(0, sorted(old)), (1, [newer])]
    again = open_source(pipeline_spark, tmp_path)
    assert list(batches(again, settings(tmp_path), threading.Event())) == []


def test_done_batches_move_out_and_a_restart_moves_what_was_left(pipeline_spark, tmp_path, landing):
    uris = [land(landing, name, 30) for name in ("a", "b")]
    source = open_source(pipeline_spark, tmp_path, keep=False)
    batch_id = source.start(source.new_files())
    source.log.finish(batch_id)  # done, and the job dies before moving the files
    assert sorted(p.name for p in landing.iterdir()) == ["a", "b"]
    restarted = open_source(pipeline_spark, tmp_path, keep=False)
    assert list(landing.iterdir()) == []
    assert sorted(p.name for p in (tmp_path / "out" / "_landed").iterdir()) == ["a", "b"]
    later = land(landing, "c", 0)
    assert restarted.new_files() == [later] and later not in uris


def test_the_record_is_compacted_and_still_knows_every_kept_file(
    pipeline_spark, tmp_path, landing, monkeypatch
):
    monkeypatch.setattr(source_module, "COMPACT_EVERY", 2)
    source = open_source(pipeline_spark, tmp_path)
    for n in range(5):
        land(landing, f"f{n}", 50 - n)
        batch_id = source.start(source.new_files())
        source.finish(batch_id, source.log.listing(batch_id) or [])
    (landing / "f0").unlink()  # a listed file gone from the landing: nothing to take for it
    listed = sorted(p.name for p in (tmp_path / "out" / "_checkpoint" / "listed").iterdir())
    assert [name for name in listed if not name.startswith(".")] == ["4", "4.compact"]
    restarted = open_source(pipeline_spark, tmp_path)
    assert restarted.new_files() == []
    newest = land(landing, "f5", 0)
    assert restarted.new_files() == [newest]


def test_hadoops_listing_and_move_for_other_file_systems_agree_with_the_local_ones(
    pipeline_spark, tmp_path, landing
):
    """What an ``hdfs://`` or ``s3a://`` landing directory goes through, on ``file:``."""
    first, second = land(landing, "a", 20), land(landing, "b", 10)
    files = HadoopFiles(pipeline_spark)
    by_hadoop = sorted(files.files(landing.as_uri()), key=lambda found: found[1])
    by_scandir = list_landing(str(landing), files)
    assert [same_file(uri) for uri, _ in by_hadoop] == [same_file(first), same_file(second)]
    assert [round(t) for _, t in by_hadoop] == [round(f.modified) for f in by_scandir]
    target = (tmp_path / "moved" / "a").as_uri()
    files.move(first, target)
    files.move(first, target)  # gone already: left alone
    assert [p.name for p in landing.iterdir()] == ["b"]
    assert (tmp_path / "moved" / "a").read_text() == "{}\n"


class StopDuringBatch(BatchWriter):
    """Asks the job to stop, then runs a Spark job that would take a minute."""

    def __init__(self, out: str, stop: threading.Event) -> None:
        super().__init__(out)
        self.stop = stop

    def __call__(self, spark, batch_id: int, listed: list[str]) -> None:
        self.stop.set()
        spark.sparkContext.parallelize([60], 1).map(time.sleep).collect()


def one_interval(landing: Path) -> None:
    writer = LandingWriter(landing, RunIdentity("r", "w0", 1, "wl", "d", "memory", {}))
    writer.interval(IntervalStats(0, 1000, sent=1))
    writer.end(incomplete=False, stop_reason=None)


def test_a_stop_cancels_the_batch_under_way_and_a_restart_runs_it_again(
    pipeline_spark, tmp_path, landing
):
    one_interval(landing)
    stop = threading.Event()
    live = settings(tmp_path, once=False, trigger_s=0.2)
    started = time.monotonic()
    ingest(pipeline_spark, live, stop, StopDuringBatch(live.out, stop))
    assert time.monotonic() - started < 30  # not the minute the batch's job would take
    assert not (tmp_path / "out" / "_checkpoint" / "done").exists()
    assert len(list(landing.iterdir())) == 2  # nothing moved out: the batch did not finish
    totals = ingest(pipeline_spark, settings(tmp_path), threading.Event())
    assert totals["intervals"] == len(METRICS) and totals["runs"] == len(METRICS)
    intervals = ds.dataset(tmp_path / "out" / "intervals", partitioning="hive").to_table()
    assert set(intervals.column("batch").to_pylist()) == {0}  # the same batch, run again


def test_an_out_of_sparks_file_source_is_refused_not_overwritten(pipeline_spark, tmp_path):
    """loadgen 0.1.0's job kept Spark's checkpoint there: starting at batch 0 would replace
    that job's batch 0 and lose its merge state."""
    offsets = tmp_path / "out" / "_checkpoint" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "0").write_text("v1\n")
    with pytest.raises(ConfigError, match="Spark's file source") as refused:
        open_source(pipeline_spark, tmp_path)
    assert refused.value.exit_code == 2 and str(tmp_path / "out") in str(refused.value)
