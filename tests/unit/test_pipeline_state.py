"""The driver-side batch merge and its per-batch state files, without Spark.

``merge_files`` is what the job's sink runs on each micro-batch's (path, bytes); the state
files are what makes a batch re-run after a crash start where its first attempt started.
"""

import time
from pathlib import Path

import numpy as np

from loadgen import hdr
from loadgen.pipeline import state
from loadgen.pipeline.landing import LandingWriter, RunIdentity
from loadgen.pipeline.sink import merge_files
from loadgen.pipeline.tables import STATE
from loadgen.stats import METRICS, IntervalStats

WORKERS = 2
INTERVALS = 6


def landed(directory: Path, intervals: int = INTERVALS, samples: int = 300) -> list[Path]:
    """Two workers' interval files, then their end markers, in landing order."""
    writers = [
        LandingWriter(directory, RunIdentity("r", f"w{n}", WORKERS, "wl", "d", "memory", {}))
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


def merged_in_batches(out: Path, paths: list[Path], cuts: list[int]) -> dict[str, list[dict]]:
    """The files merged in batches split at ``cuts``, the state saved and loaded in between."""
    tables: dict[str, list[dict]] = {}
    for batch_id, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(paths)], strict=True)):
        states = state.load(out, batch_id)
        chunk = paths[start:end]
        step = merge_files(
            [p.as_uri() for p in chunk], [p.read_bytes() for p in chunk], states, 1.0
        )
        state.save(out, batch_id, states)
        for table, rows in step.items():
            tables.setdefault(table, []).extend(rows)
    return tables


def key(row: dict) -> tuple:
    return (row["metric"], row.get("seq", -1))


def test_batches_with_saved_state_give_the_rows_of_one_batch(tmp_path):
    paths = landed(tmp_path / "landing")
    whole = merged_in_batches(tmp_path / "one", paths, [])
    split = merged_in_batches(tmp_path / "split", paths, [1, 5, 9, len(paths) - 1])
    assert len(whole["intervals"]) == INTERVALS * len(METRICS)
    assert len(whole["runs"]) == len(METRICS) and all(r["complete"] for r in whole["runs"])
    for table in ("intervals", "runs"):
        assert sorted(whole[table], key=key) == sorted(split[table], key=key)
    assert whole["quarantine"] == split["quarantine"] == []


def test_a_rerun_batch_starts_from_the_state_before_it_and_old_states_go(tmp_path):
    paths = landed(tmp_path / "landing")
    out = tmp_path / "out"
    merged_in_batches(out, paths, [2, 4, 6])  # batches 0..3; only 2 and 3 are kept
    assert sorted(p.name for p in (out / STATE).iterdir()) == ["batch=2", "batch=3"]
    first = state.load(out, 3)  # what batch 3 started from: after batch 2, not after itself
    again = merge_files([p.as_uri() for p in paths[6:]], [p.read_bytes() for p in paths[6:]],
                        first, 1.0)  # fmt: skip
    assert len(again["runs"]) == len(METRICS)
    assert len(again["intervals"]) == (INTERVALS - 3) * len(METRICS)
    assert state.load(out, 0) == {}


def test_lines_of_other_runs_and_garbage_do_not_touch_the_groups_state(tmp_path):
    paths = landed(tmp_path / "landing", intervals=1)
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"not json\n\xff\n")
    states: dict = {}
    step = merge_files(
        [garbage.as_uri(), paths[0].as_uri()], [garbage.read_bytes(), paths[0].read_bytes()],
        states, 1.0,
    )  # fmt: skip
    assert [row["source_file"] for row in step["quarantine"]] == [garbage.as_uri()] * 2
    assert sorted(states) == sorted(("r", metric) for metric in METRICS)


def test_the_driver_merges_thousands_of_landing_lines_a_second(tmp_path):
    """The driver merges every landing line (one per worker, interval and metric): state it."""
    paths = landed(tmp_path / "landing", intervals=40, samples=2000)
    contents = [p.read_bytes() for p in paths]
    lines = sum(content.count(b"\n") for content in contents)
    started = time.perf_counter()
    step = merge_files([p.as_uri() for p in paths], contents, {}, 1.0)
    seconds = time.perf_counter() - started
    assert len(step["intervals"]) == 40 * len(METRICS)
    print(f"driver merge: {lines} lines in {seconds:.3f} s = {lines / seconds:.0f} lines/s")
    assert lines / seconds > 200  # a loose floor on a shared machine; the rate is in the docs
