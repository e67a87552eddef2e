"""The executor tasks without Spark: landing bytes through ``parse_batches`` and
``merge_partition`` in micro-batches, each batch's state rows fed to the next as Spark does.

Also the shipped zip: every module in it imports only what an executor without loadgen has.
"""

import ast
import json
import sys
import zipfile
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

from loadgen.base import hdr
from loadgen.engine.stats import METRICS, IntervalStats
from loadgen.pipeline import ship
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.tasks import merge
from loadgen.pipeline.tasks.merge import merge_partition
from loadgen.pipeline.tasks.parse import parse_batches
from loadgen.pipeline.tasks.records import META_DIGEST, STATE, TABLE

WORKERS = 2
INTERVALS = 6


META = {"workload": {"producerRate": 2000}, "host": "vm"}


def landed(directory: Path, intervals: int = INTERVALS, samples: int = 300) -> list[Path]:
    """Two workers' interval files, then their end markers, in landing order."""
    writers = [
        LandingWriter(directory, RunIdentity("r", f"w{n}", WORKERS, "wl", "d", "memory", META))
        for n in range(WORKERS)
    ]
    rng = np.random.default_rng(3)
    paths = []
    for seq in range(intervals):
        for writer in writers:
            values = rng.lognormal(13, 1, samples).astype(np.int64)
            stats = IntervalStats(
                seq * 1000,
                seq * 1000 + 1000,
                sent=samples,
                histograms={metric: hdr.record_ns(metric, values) for metric in METRICS},
            )
            paths.append(writer.interval(stats))
    paths += [writer.end(incomplete=False, stop_reason=None) for writer in writers]
    return paths


def run_batch(paths: list[Path], states: list[dict]) -> list[dict]:
    """One micro-batch through both tasks: the files parsed, then merged with ``states``."""
    files = pa.RecordBatch.from_pydict(
        {"path": [p.as_uri() for p in paths], "content": [p.read_bytes() for p in paths]}
    )
    lines = [row for batch in parse_batches(iter([files])) for row in batch.to_pylist()]
    state_rows = [{**dict.fromkeys(lines[0]), **row} for row in states] if lines else states
    batch = pa.RecordBatch.from_pylist(lines + state_rows)
    return [row for out in merge_partition(iter([batch]), now=1.0) for row in out.to_pylist()]


def in_batches(paths: list[Path], cuts: list[int]) -> dict[str, list[dict]]:
    """The files merged in batches split at ``cuts``, each batch's state carried to the next."""
    tables: dict[str, list[dict]] = {}
    states: list[dict] = []
    for start, end in zip([0, *cuts], [*cuts, len(paths)], strict=True):
        out = run_batch(paths[start:end], states)
        kept = {(row["run_id"], row["metric"]) for row in out if row[TABLE] == STATE}
        states = [row for row in states if (row["run_id"], row["metric"]) not in kept]
        states += [
            {"run_id": r["run_id"], "metric": r["metric"], STATE: r[STATE]}
            for r in out
            if r[TABLE] == STATE
        ]
        for row in out:
            tables.setdefault(row[TABLE], []).append(row)
    return tables


def key(row: dict) -> tuple:
    return (row["metric"], row.get("seq", -1))


def same_rows(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if v is not None} for r in rows), key=key)


def test_batches_with_carried_state_give_the_rows_of_one_batch(tmp_path):
    paths = landed(tmp_path / "landing")
    whole = in_batches(paths, [])
    split = in_batches(paths, [1, 5, 9, len(paths) - 1])
    assert len(whole["intervals"]) == INTERVALS * len(METRICS)
    assert len(whole["runs"]) == len(METRICS) and all(r["complete"] for r in whole["runs"])
    for table in ("intervals", "runs"):
        assert same_rows(whole[table]) == same_rows(split[table])
    assert "quarantine" not in whole and "quarantine" not in split


def test_interval_rows_equal_the_merged_histograms_summaries(tmp_path):
    paths = landed(tmp_path / "landing", intervals=2)
    rows = [r for r in in_batches(paths, [])["intervals"] if r["metric"] == "endToEnd"]
    for row in rows:
        merged = hdr.decode("endToEnd", row["hist"])
        expected = hdr.summary(merged)
        assert row["count"] == 600 and row["workers_reported"] == 2
        assert (row["p50"], row["p99"], row["max"], row["mean"]) == (
            expected.p50, expected.p99, expected.max, expected.mean,
        )  # fmt: skip


def test_lines_of_other_runs_and_garbage_do_not_touch_a_groups_state(tmp_path):
    paths = landed(tmp_path / "landing", intervals=1)
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"not json\n\xff\n")
    out = run_batch([garbage, paths[0]], [])
    quarantined = [row for row in out if row[TABLE] == "quarantine"]
    assert [row["source_file"] for row in quarantined] == [garbage.as_uri()] * 2
    states = {(row["run_id"], row["metric"]) for row in out if row[TABLE] == STATE}
    assert states == {("r", metric) for metric in METRICS}


def test_a_group_whose_merge_fails_is_quarantined_and_keeps_its_state(tmp_path, monkeypatch):
    paths = landed(tmp_path / "landing", intervals=2)
    first = run_batch(paths[:2], [])
    states = [{"run_id": r["run_id"], "metric": r["metric"], STATE: r[STATE]}
              for r in first if r[TABLE] == STATE]  # fmt: skip
    real = merge.advance

    def broken(run_id, metric, *args, **kwargs):
        if metric == "publish":
            raise RuntimeError("a bug")
        return real(run_id, metric, *args, **kwargs)

    monkeypatch.setattr(merge, "advance", broken)
    out = run_batch(paths[2:], states)
    failed = [row for row in out if row[TABLE] == "quarantine"]
    assert failed and all(row["metric"] == "publish" for row in failed)
    assert all("the merge failed on this group: RuntimeError: a bug" in r["reason"] for r in failed)
    kept = {r["metric"]: r[STATE] for r in out if r[TABLE] == STATE}
    before = {r["metric"]: r[STATE] for r in states}
    assert kept["publish"] == before["publish"] and kept["endToEnd"] != before["endToEnd"]
    assert {r["metric"] for r in out if r[TABLE] == "runs"} == set(METRICS) - {"publish"}


def test_untouched_state_rows_pass_through_unchanged(tmp_path):
    paths = landed(tmp_path / "landing", intervals=1)
    state_row = {"run_id": "another", "metric": "publish", STATE: '{"not": "parsed"}'}
    out = run_batch(paths[:1], [state_row])
    assert {TABLE: STATE, **state_row} in [
        {k: r[k] for k in (TABLE, "run_id", "metric", STATE)} for r in out
    ]


def test_the_files_read_counter_counts_every_file_once(tmp_path):
    paths = landed(tmp_path / "landing", intervals=2)

    class Counter:
        value = 0

        def add(self, n: int) -> None:
            self.value += n

    counter = Counter()
    batches = [pa.RecordBatch.from_pydict({"path": [p.as_uri()], "content": [p.read_bytes()]})
               for p in paths]  # fmt: skip
    list(partial(parse_batches, files_read=counter)(iter(batches)))
    assert counter.value == len(paths)


def test_a_runs_meta_crosses_the_shuffle_once_per_metric_and_is_back_on_every_row(tmp_path):
    paths = landed(tmp_path / "landing", intervals=2)
    duplicate = tmp_path / "duplicate.json"
    duplicate.write_bytes(paths[0].read_bytes())
    files = pa.RecordBatch.from_pydict(
        {"path": [p.as_uri() for p in [*paths, duplicate]],
         "content": [p.read_bytes() for p in [*paths, duplicate]]}
    )  # fmt: skip
    lines = [row for batch in parse_batches(iter([files])) for row in batch.to_pylist()]
    carried = [row for row in lines if row["meta"] is not None]
    assert sorted(row["metric"] for row in carried) == sorted(METRICS)
    assert all(row[META_DIGEST] == carried[0][META_DIGEST] for row in lines)
    out = [row for b in merge_partition(iter([pa.RecordBatch.from_pylist(lines)]), 1.0)
           for row in b.to_pylist()]  # fmt: skip
    runs = [row for row in out if row[TABLE] == "runs"]
    assert len(runs) == len(METRICS) and all(json.loads(r["meta"]) == META for r in runs)
    quarantined = [row for row in out if row[TABLE] == "quarantine"]
    assert len(quarantined) == len(METRICS)  # the duplicate's lines, each with its meta
    assert all(json.loads(json.loads(r["raw"])["meta"]) == META for r in quarantined)


def test_a_meta_digest_without_its_meta_is_a_bug_that_quarantines_the_group(tmp_path):
    paths = landed(tmp_path / "landing", intervals=1)
    files = pa.RecordBatch.from_pydict(
        {"path": [paths[0].as_uri()], "content": [paths[0].read_bytes()]}
    )
    lines = [row for batch in parse_batches(iter([files])) for row in batch.to_pylist()]
    lines[0]["meta"] = None
    out = [row for b in merge_partition(iter([pa.RecordBatch.from_pylist(lines)]), 1.0)
           for row in b.to_pylist()]  # fmt: skip
    (failed,) = [row for row in out if row[TABLE] == "quarantine"]
    assert failed["metric"] == lines[0]["metric"] and "KeyError" in failed["reason"]


SHIPPED_ROOTS = {"numpy", "pyarrow", "pyspark", "loadgen"}
"""What a shipped module may import besides the standard library (pyspark: type hints only)."""


def test_every_shipped_module_imports_only_what_an_executor_has(tmp_path):
    archive = ship.build_archive(tmp_path)
    with zipfile.ZipFile(archive) as bundle:
        names = set(bundle.namelist())
        shipped = {n[:-3].replace("/", ".").removesuffix(".__init__") for n in names}
        for name in names:
            tree = ast.parse(bundle.read(name))
            for node in ast.walk(tree):
                modules = (
                    [a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                )  # fmt: skip
                for module in modules:
                    root = module.split(".")[0]
                    assert root in sys.stdlib_module_names or root in SHIPPED_ROOTS, (name, module)
                    if root == "loadgen":
                        assert module in shipped or module == "loadgen", (name, module)
    assert "loadgen/pipeline/tasks/merge.py" in names and "loadgen/base/hdr_core.py" in names
