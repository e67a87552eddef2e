"""The pipeline's landing lines and merge, without Spark: the same code the Spark job runs.

Each test feeds landing lines (read back from files the real LandingWriter wrote) through
``advance`` in micro-batches, round-tripping the state through its JSON form between batches as
Spark does, and checks what is emitted and when.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.engine.listeners import Listeners, OnInterval
from loadgen.engine.stats import END_TO_END, METRICS, PUBLISH, IntervalStats
from loadgen.pipeline.landing import LandingWriter, RunIdentity, close_run, open_landing
from loadgen.pipeline.tasks.merge import SUMMARY_COLUMNS, RunState, advance
from loadgen.pipeline.tasks.records import TABLES

RUN = "run-1"


def interval(seq: int, *, warmup: bool = False, seed: int = 0) -> IntervalStats:
    rng = np.random.default_rng(seed * 1000 + seq)
    values = rng.lognormal(14, 1, 500).astype(np.int64)
    return IntervalStats(
        start_ms=1_000 * seq,
        end_ms=1_000 * (seq + 1),
        sent=500,
        received=499,
        bytes_sent=500 * 100,
        warmup=warmup,
        histograms={metric: hdr.record_ns(metric, values) for metric in METRICS},
    )


def writer(directory: Path, worker: str = "w0", workers: int = 1) -> LandingWriter:
    identity = RunIdentity(RUN, worker, workers, "wl", "Memory", "memory", {"producerRate": 5})
    return LandingWriter(directory, identity)


def lines(path: Path, metric: str = PUBLISH) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [row for row in rows if row["metric"] == metric]


class Feed:
    """One (run, metric) group fed batch by batch, its state serialised in between."""

    def __init__(self, metric: str = PUBLISH) -> None:
        self.metric = metric
        self.state_text: str | None = None
        self.intervals: list[dict] = []
        self.runs: list[dict] = []
        self.quarantine: list[dict] = []

    def batch(self, *paths: Path, extra: list[dict] = ()) -> None:
        rows = [row for path in paths for row in lines(path, self.metric)] + list(extra)
        state = RunState.loads(self.state_text) if self.state_text else None
        step = advance(RUN, self.metric, state, rows, now=123.0)
        self.state_text = step.state.dumps() if step.state else None
        self.intervals += step.intervals
        self.runs += step.runs
        self.quarantine += step.quarantine


def test_landing_files_hold_one_line_per_metric_and_appear_whole(tmp_path):
    land = writer(tmp_path)
    first = land.interval(interval(0, warmup=True))
    end = land.end(incomplete=False, stop_reason=None)
    assert [p.name for p in sorted(tmp_path.iterdir())] == [first.name, end.name]
    rows = [json.loads(line) for line in first.read_text().splitlines()]
    assert [row["metric"] for row in rows] == list(METRICS)
    assert {row["kind"] for row in rows} == {"interval"}
    assert rows[0]["warmup"] is True and rows[0]["seq"] == 0 and rows[0]["count"] == 500
    assert hdr.decode(PUBLISH, rows[0]["hist"]).total == 500
    assert json.loads(rows[0]["meta"]) == {"producerRate": 5}
    ends = [json.loads(line) for line in end.read_text().splitlines()]
    assert {(row["kind"], row["seq"]) for row in ends} == {("end", 1)}


def test_one_worker_gets_each_interval_at_once_and_the_run_at_its_end(tmp_path):
    land = writer(tmp_path)
    feed = Feed()
    files = [land.interval(interval(seq, warmup=seq == 0)) for seq in range(4)]
    for path in files:
        feed.batch(path)
    assert [row["seq"] for row in feed.intervals] == [0, 1, 2, 3]
    assert feed.runs == []
    feed.batch(land.end(incomplete=False, stop_reason=None))
    (run,) = feed.runs
    measured = hdr.merge(PUBLISH, [interval(s).histogram(PUBLISH) for s in (1, 2, 3)])
    expected = hdr.summary(measured)
    assert {name: run[name] for name in SUMMARY_COLUMNS} == {
        name: getattr(expected, name) for name in SUMMARY_COLUMNS
    }
    assert run["intervals"] == 3 and run["sent"] == 1500 and run["seconds"] == 3.0
    assert run["complete"] is True and run["stop_reason"] is None
    assert hdr.decode(PUBLISH, run["hist"]).total == 1500
    assert feed.intervals[0]["warmup"] is True
    assert feed.intervals[2]["p99"] == hdr.value_at_percentile(interval(2).histogram(PUBLISH), 99.0)


def test_an_interval_of_two_workers_is_emitted_once_both_reported_it(tmp_path):
    a, b = writer(tmp_path, "a", workers=2), writer(tmp_path, "b", workers=2)
    feed = Feed(END_TO_END)
    feed.batch(a.interval(interval(0, seed=1)))
    assert feed.intervals == []
    feed.batch(b.interval(interval(0, seed=2)))
    (row,) = feed.intervals
    merged = hdr.merge(
        END_TO_END,
        [interval(0, seed=s).histogram(END_TO_END) for s in (1, 2)],
    )
    assert row["count"] == 1000 and row["sent"] == 1000 and row["workers_reported"] == 2
    assert row["p999"] == hdr.value_at_percentile(merged, 99.9) and row["complete"] is True


def test_an_end_marker_that_overtakes_an_interval_waits_for_it(tmp_path):
    land = writer(tmp_path)
    feed = Feed()
    first, last = land.interval(interval(0)), land.interval(interval(1))
    end = land.end(incomplete=False, stop_reason=None)
    feed.batch(first, end)
    assert feed.runs == []  # the end marker announced 2 intervals; 1 has arrived
    feed.batch(last)
    assert [row["seq"] for row in feed.intervals] == [0, 1]
    assert feed.runs[0]["intervals"] == 2 and feed.runs[0]["complete"] is True


def test_a_run_whose_worker_died_is_finalised_incomplete_by_a_close_marker(tmp_path):
    a, b = writer(tmp_path, "a", workers=2), writer(tmp_path, "b", workers=2)
    feed = Feed()
    feed.batch(a.interval(interval(0)), b.interval(interval(0)), a.interval(interval(1)))
    assert [row["seq"] for row in feed.intervals] == [0]
    feed.batch(close_run(tmp_path, RUN, "worker b lost"))
    assert [(row["seq"], row["complete"]) for row in feed.intervals] == [(0, True), (1, False)]
    (run,) = feed.runs
    assert run["complete"] is False and run["stop_reason"] == "closed: worker b lost"
    assert run["count"] == 1500  # both workers' interval 0, worker a's interval 1


def test_a_stopped_run_keeps_its_stop_reason(tmp_path):
    land = writer(tmp_path)
    feed = Feed()
    feed.batch(land.interval(interval(0)), land.end(incomplete=True, stop_reason="interrupted"))
    assert feed.runs[0]["complete"] is False and feed.runs[0]["stop_reason"] == "interrupted"


def test_duplicates_and_late_lines_are_quarantined_and_change_nothing(tmp_path):
    land = writer(tmp_path)
    feed = Feed()
    path = land.interval(interval(0))
    feed.batch(path)
    feed.batch(path)
    assert len(feed.intervals) == 1
    assert "duplicate: worker w0 already reported interval 0" in feed.quarantine[0]["reason"]
    feed.batch(land.end(incomplete=False, stop_reason=None))
    feed.batch(land.interval(interval(1)))
    assert len(feed.runs) == 1 and feed.runs[0]["count"] == 500
    assert "was finalised" in feed.quarantine[1]["reason"]
    assert json.loads(feed.quarantine[1]["raw"])["seq"] == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"_problem": "not JSON: Expecting value", "_raw": "{not json"}, "not JSON"),
        ({"kind": "bogus"}, "unknown kind 'bogus'"),
        ({"metric": "latency"}, "unknown metric 'latency'"),
        ({"hist": "SGVsbG8="}, "histogram not readable as publish"),
        ({"seq": None}, "missing field(s): seq"),
        ({"workers": 0}, "workers must be at least 1"),
    ],
)
def test_a_bad_line_is_quarantined_with_its_reason_and_the_good_ones_still_count(
    tmp_path, change, reason
):
    land = writer(tmp_path)
    good = land.interval(interval(0))
    bad = {**lines(land.interval(interval(1)))[0], **change, "source_file": "file:/x/bad.json"}
    feed = Feed()
    feed.batch(good, extra=[bad])
    assert [row["seq"] for row in feed.intervals] == [0]
    (quarantined,) = feed.quarantine
    assert reason in quarantined["reason"]
    assert quarantined["source_file"] == "file:/x/bad.json" and quarantined["raw"]


def test_closing_a_run_nothing_was_landed_for_is_quarantined(tmp_path):
    feed = Feed()
    feed.batch(close_run(tmp_path, RUN, "typo"))
    assert "nothing to close" in feed.quarantine[0]["reason"]
    assert feed.state_text is None


def test_every_emitted_row_has_exactly_its_tables_columns(tmp_path):
    land = writer(tmp_path)
    feed = Feed()
    feed.batch(land.interval(interval(0)), land.end(incomplete=False, stop_reason=None))
    feed.batch(land.interval(interval(5)))
    for table, rows in (
        ("intervals", feed.intervals),
        ("runs", feed.runs),
        ("quarantine", feed.quarantine),
    ):
        assert rows, table
        assert set(rows[0]) == {name for name, _ in TABLES[table]}, table


def test_an_unusable_landing_directory_is_a_config_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    identity = writer(tmp_path).identity
    with pytest.raises(ConfigError, match=f"parent {blocker} is a file") as raised:
        open_landing(blocker / "sub", identity)
    assert raised.value.path == "pipeline" and raised.value.allowed == "a writable directory"


def test_a_landing_that_fails_mid_run_is_logged_and_the_run_goes_on(tmp_path, caplog):
    target = tmp_path / "landing"
    feed = open_landing(target, writer(tmp_path).identity)
    seen = []
    passing = OnInterval(lambda stats, backlog: seen.append(backlog))
    on_interval = Listeners((feed, passing)).interval
    os.rmdir(target)
    target.write_text("now a file")  # the directory is gone: every landing fails
    on_interval(interval(0), 7)
    feed.end([interval(0)], incomplete=False, stop_reason=None)
    assert seen == [7] and feed.failures == 2  # interval 0 and the end marker
    assert "could not land" in caplog.text


def test_the_feed_lands_one_interval_behind_and_the_final_list_at_the_end(tmp_path):
    feed = open_landing(tmp_path, writer(tmp_path).identity)
    on_interval = feed.on_interval
    taken = [interval(0), interval(1)]
    on_interval(taken[0], 0)
    assert list(tmp_path.iterdir()) == []
    on_interval(taken[1], 0)
    assert [p.name for p in tmp_path.iterdir()] == ["run-1-w0-000000.json"]
    folded = IntervalStats(1_000, 2_500, sent=777, histograms=taken[1].histograms)
    feed.end([taken[0], folded], incomplete=False, stop_reason=None)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run-1-w0-000000.json",
        "run-1-w0-000001.json",
        "run-1-w0-end.json",
    ]
    last = lines(tmp_path / "run-1-w0-000001.json")[0]
    assert (last["sent"], last["interval_end"]) == (777, 2_500)
    assert lines(tmp_path / "run-1-w0-end.json")[0]["seq"] == 2


def test_a_second_close_in_the_same_batch_is_quarantined_not_a_second_run_row(tmp_path):
    land = writer(tmp_path, "a", workers=2)
    feed = Feed()
    feed.batch(land.interval(interval(0)))
    feed.batch(close_run(tmp_path, RUN, "first"), close_run(tmp_path, RUN, "second"))
    assert len(feed.runs) == 1
    assert "was finalised" in feed.quarantine[0]["reason"]


def test_a_runs_faults_reach_its_runs_row_as_json_text(tmp_path):
    faults = [{"at": 8.0, "action": "kill", "node": 2, "unavailableSeconds": 7.0, "lost": 0}]
    land = writer(tmp_path)
    feed = Feed()
    feed.batch(
        land.interval(interval(0)), land.end(incomplete=False, stop_reason=None, faults=faults)
    )
    assert json.loads(feed.runs[0]["faults"]) == faults
    other = writer(tmp_path / "other")
    (tmp_path / "other").mkdir()
    plain = Feed()
    plain.batch(other.interval(interval(0)), other.end(incomplete=False, stop_reason=None))
    assert plain.runs[0]["faults"] is None
