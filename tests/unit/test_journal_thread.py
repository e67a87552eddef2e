"""The journal is written off the measurement thread: a slow disk delays the file, never the run,
and a hung one does not hold the run's end. The disk is a test double (a writer that sleeps or
blocks before writing); the runs are real (memory broker)."""

import json
import logging
import statistics
import threading
import time

import numpy as np
import pytest
from tests.unit.test_journal import NAME, START, interval, kept_intervals
from tests.unit.test_report import MEMORY, workload

from loadgen.engine.listeners import Listeners, OnInterval
from loadgen.engine.spill import Spill
from loadgen.formats.journal import JournalWriter, journal_path, read_journal
from loadgen.result_files.checkpoint import FINISH_WAIT_S, THREAD_NAME, Checkpoint
from loadgen.result_files.destination import Destination
from loadgen.running import runner
from loadgen.running.request import RunOptions, RunRequest

STATS_INTERVAL_S = 0.2
OPTIONS = RunOptions(duration_s=2, warmup_s=0, stats_interval_s=STATS_INTERVAL_S)
SLOW_WRITE_S = 0.3
"""Longer than an interval: on the measurement thread every interval would wait for it."""


class SlowWriter(JournalWriter):
    """A disk that takes ``SLOW_WRITE_S`` for every write."""

    def write(self, directory, intervals):
        time.sleep(SLOW_WRITE_S)
        super().write(directory, intervals)


class HungWriter(JournalWriter):
    """A disk that hangs at the second write (NFS gone, a dying device) until ``release``."""

    release = threading.Event()

    def write(self, directory, intervals):
        if self.directory is not None:
            self.release.wait()
        super().write(directory, intervals)


def journal_threads():
    return [thread for thread in threading.enumerate() if thread.name == THREAD_NAME]


def test_a_slow_disk_delays_the_journal_never_the_runs_intervals(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "JournalWriter", SlowWriter)
    request = RunRequest(workload(), MEMORY, OPTIONS, out_dir=tmp_path)
    _, _, outcome = runner.execute(request)  # run_one would remove the journal
    intervals = outcome.intervals
    lengths = [(s.end_ms - s.start_ms) / 1000 for s in intervals]
    assert len(lengths) == round(OPTIONS.duration_s / STATS_INTERVAL_S), lengths
    # written on the measurement thread, each took 0.31-0.35 s and the run 3.2 s: the median
    # and the span, not each interval, which a late wake-up on a busy machine moves
    assert statistics.median(lengths) == pytest.approx(STATS_INTERVAL_S, rel=0.2), lengths
    span = (intervals[-1].end_ms - intervals[0].start_ms) / 1000
    assert span == pytest.approx(OPTIONS.duration_s, rel=0.15), lengths
    journal = journal_path(runner.result_path(tmp_path, request, outcome.started_ms))
    _, written = read_journal(journal)  # complete once the run has ended
    assert [s.sent for s in written] == [s.sent for s in outcome.intervals]
    assert written[-1].end_ms == outcome.intervals[-1].end_ms  # the drained last one
    assert not journal_threads()


def test_a_hung_disk_does_not_hold_the_runs_end(tmp_path, monkeypatch, caplog):
    HungWriter.release.clear()
    monkeypatch.setattr(runner, "JournalWriter", HungWriter)
    took = []
    finish = Checkpoint.finish

    def timed(self, intervals, wait_s):
        began = time.monotonic()
        finish(self, intervals, wait_s)
        took.append(time.monotonic() - began)

    monkeypatch.setattr(Checkpoint, "finish", timed)
    options = RunOptions(duration_s=1, warmup_s=0, stats_interval_s=STATS_INTERVAL_S)
    try:
        report = runner.run_one(RunRequest(workload(), MEMORY, options, out_dir=tmp_path))
        [hung] = journal_threads()
        files = {path: path.read_bytes() for path in tmp_path.iterdir()}
    finally:
        HungWriter.release.set()
    assert took[0] < FINISH_WAIT_S + 0.5, took
    assert "may be behind the run" in caplog.text
    result = json.loads(report.path.read_text())
    assert len(result["publishRate"]) == len(report.outcome.intervals) == 5  # every interval
    assert result["totalMessagesSent"] >= sum(s.sent for s in report.outcome.intervals) > 0
    assert not list(tmp_path.glob("*.journal"))  # the result replaced it
    hung.join(10)
    assert not hung.is_alive()
    after = {path: path.read_bytes() for path in tmp_path.iterdir()}
    assert after == files  # the writer, freed, added nothing to the run's files


def test_the_writer_thread_ends_with_a_run_that_raises(tmp_path):
    def failing(stats, backlog):
        raise RuntimeError("a listener's own error")

    request = RunRequest(
        workload(), MEMORY, OPTIONS, out_dir=tmp_path, listeners=(OnInterval(failing),)
    )
    with pytest.raises(RuntimeError, match="a listener's own error"):
        runner.execute(request)
    assert not journal_threads()


def test_the_drained_interval_is_recorded_after_every_pending_one(tmp_path):
    """``finish`` comes while writes are pending: ``replacesLast`` still comes last."""
    intervals = kept_intervals(4)
    checkpoint = Checkpoint(SlowWriter(NAME, START), Destination(tmp_path, []))
    listeners = Listeners((checkpoint,))
    for stats in intervals:
        listeners.interval(stats, 0)
    drained = [*intervals[:-1], Spill().keep(interval(3, np.random.default_rng(1)))]
    checkpoint.finish(drained, wait_s=5.0)  # the slow disk is not a hung one
    lines = journal_path(tmp_path / NAME).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["kind"] for r in records] == ["start", *["interval"] * 5]
    assert [r.get("replacesLast", False) for r in records[1:]] == [False] * 4 + [True]
    assert records[-1]["sent"] == drained[-1].sent
    assert [s.sent for s in read_journal(journal_path(tmp_path / NAME))[1]] == [
        s.sent for s in drained
    ]


def test_a_slow_disk_takes_every_pending_interval_in_one_write(tmp_path, caplog):
    """Coalescing: the intervals that came during a slow write go in with the next one."""
    caplog.set_level(logging.DEBUG, logger="loadgen.results")
    checkpoint = Checkpoint(SlowWriter(NAME, START), Destination(tmp_path, []))
    for stats in kept_intervals(6):
        checkpoint.on_interval(stats, 0)  # all during the first write
    checkpoint.finish([], wait_s=5.0)
    assert len(read_journal(journal_path(tmp_path / NAME))[1]) == 6
    assert caplog.text.count("journal write:") <= 3  # 6 without coalescing
