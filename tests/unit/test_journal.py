"""The run's journal: appended a line per interval, read back into the result the run builds."""

import json
import logging
import os
import statistics
import time
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.cli.main import cli
from loadgen.engine.listeners import Listeners
from loadgen.engine.spill import Spill
from loadgen.engine.stats import END_TO_END, END_TO_END_UNCORRECTED, METRICS, PUBLISH, IntervalStats
from loadgen.formats import journal
from loadgen.formats.hlog import hlog_path, hlog_text
from loadgen.formats.journal import (
    JournalWriter,
    append_line,
    journal_path,
    read_journal,
    result_from_journal,
)
from loadgen.formats.result_json import (
    UNFINISHED,
    ResultHeader,
    RunStart,
    result_document,
    unfinished_outcome,
)
from loadgen.result_files.checkpoint import Checkpoint
from loadgen.result_files.destination import Destination

STARTED_MS = 1_795_400_000_123
NAME = "run-Memory-2026-11-26-12-00-00.json"
START = RunStart(
    ResultHeader("run", "Memory", 128, 1, 2, 1, 1, 1),
    "f00d",
    STARTED_MS,
    {"loadgenVersion": "0", "workload": {"name": "run"}},
    {"duration_s": 5.0, "topic_names": []},
    {"workers": [], "processes": 1},
)


def interval(index, rng, *, warmup=False, uncorrected=False):
    start = STARTED_MS + 250 + index * 1000
    values = rng.lognormal(13, 1, 2_000).astype(np.int64)
    metrics = (
        (PUBLISH, END_TO_END, END_TO_END_UNCORRECTED) if uncorrected else (PUBLISH, END_TO_END)
    )
    return IntervalStats(
        start_ms=start,
        end_ms=start + 1000,
        sent=len(values),
        received=len(values) - index % 3,
        bytes_sent=128 * len(values),
        duplicates=index % 2,
        warmup=warmup,
        histograms={metric: hdr.record_ns(metric, values) for metric in metrics},
    )


def kept_intervals(count, warmups=2):
    """Intervals as a run keeps them: spilled to disk, warm-up ones first."""
    spill, rng = Spill(), np.random.default_rng(7)
    return [spill.keep(interval(i, rng, warmup=i < warmups)) for i in range(count)]


def journal_of(directory, intervals):
    writer = JournalWriter(NAME, START)
    for end in range(len(intervals) + 1):  # the start record first, as the runner does
        writer.write(directory, intervals[:end])
    return writer


def records(path):
    """The journal's records but for the write times, which no two writes share."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    timings = {"writeMs", "writeCpuMs"}
    return [{key: value for key, value in line.items() if key not in timings} for line in lines]


def until(condition, timeout_s=10.0):
    """Wait for what another thread does (the checkpoint's writer), at most ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def comparable(document):
    return json.loads(json.dumps(document))


def test_the_journal_rebuilds_the_result_the_run_builds_from_the_same_intervals(tmp_path):
    intervals = kept_intervals(6)
    journal_of(tmp_path, intervals)
    expected = result_document(START, unfinished_outcome(START, intervals))
    rebuilt = result_from_journal(journal_path(tmp_path / NAME))
    assert rebuilt == comparable(expected)
    assert rebuilt["incomplete"] is True and rebuilt["stopReason"] == UNFINISHED
    assert len(rebuilt["publishRate"]) == 4  # the two warm-up intervals left out
    assert rebuilt["totalMessagesSent"] == sum(s.sent for s in intervals)


def test_appended_hlogs_are_byte_for_byte_what_the_run_end_writes(tmp_path):
    intervals = kept_intervals(5)
    journal_of(tmp_path, intervals)
    for metric in METRICS:
        written = hlog_path(tmp_path / NAME, metric).read_text()
        assert written == hlog_text(metric, intervals, STARTED_MS)
        assert written.count("\n") == 5 + 3  # header, and the measured intervals only


def test_a_metric_that_begins_mid_run_gets_its_whole_hlog(tmp_path):
    spill, rng = Spill(), np.random.default_rng(3)
    intervals = [spill.keep(interval(i, rng, uncorrected=i >= 2)) for i in range(4)]
    journal_of(tmp_path, intervals)
    written = hlog_path(tmp_path / NAME, END_TO_END_UNCORRECTED).read_text()
    assert written == hlog_text(END_TO_END_UNCORRECTED, intervals, STARTED_MS)


def test_a_torn_last_line_is_left_out_with_a_warning(tmp_path, caplog):
    intervals = kept_intervals(4, warmups=0)
    journal_of(tmp_path, intervals)
    path = journal_path(tmp_path / NAME)
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 40])  # killed mid-line
    with caplog.at_level(logging.WARNING, "loadgen.results"):
        start, read = read_journal(path)
    assert "torn" in caplog.text
    assert [s.start_ms for s in read] == [s.start_ms for s in intervals[:3]]
    assert start == START


def test_a_journal_with_only_its_start_record_is_a_result_without_intervals(tmp_path):
    journal_of(tmp_path, [])
    rebuilt = result_from_journal(journal_path(tmp_path / NAME))
    assert rebuilt["publishRate"] == [] and rebuilt["totalMessagesSent"] == 0
    assert rebuilt["incomplete"] is True and rebuilt["run"]["runId"] == "f00d"


def test_a_damaged_line_before_the_last_or_a_stranger_file_is_refused(tmp_path):
    journal_of(tmp_path, kept_intervals(3))
    path = journal_path(tmp_path / NAME)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], lines[1][:30], *lines[2:]]))
    with pytest.raises(ConfigError, match="line 2 is not an interval record"):
        read_journal(path)
    path.write_text('{"publishRate": []}\n')
    with pytest.raises(ConfigError, match="not a loadgen journal"):
        read_journal(path)


def test_a_new_directory_gets_the_whole_journal_and_hlogs_then_the_appends(tmp_path):
    intervals = kept_intervals(6)
    first, second = tmp_path / "asked", tmp_path / "fallback"
    writer = JournalWriter(NAME, START)
    for end in range(4):
        writer.write(first, intervals[:end])
    for end in range(4, 7):
        writer.write(second, intervals[:end])
    reference = tmp_path / "reference"
    journal_of(reference, intervals)
    for path in (hlog_path(second / NAME, m) for m in METRICS):
        assert path.read_bytes() == (reference / path.name).read_bytes(), path.name
    moved, alone = (records(journal_path(where / NAME)) for where in (second, reference))
    assert moved == alone and len(moved) == 7
    assert len(read_journal(journal_path(first / NAME))[1]) == 3


def test_the_drained_last_interval_replaces_the_journals_last(tmp_path):
    intervals = kept_intervals(4)
    checkpoint = Checkpoint(JournalWriter(NAME, START), Destination(tmp_path, []))
    listeners = Listeners((checkpoint,))
    listeners.phase("setup")
    for stats in intervals:
        listeners.interval(stats, 0)
    drained = [*intervals[:-1], Spill().keep(interval(3, np.random.default_rng(1)))]
    checkpoint.finish(drained)
    _, read = read_journal(journal_path(tmp_path / NAME))
    assert [s.sent for s in read] == [s.sent for s in drained]
    assert read[-1].histogram(PUBLISH).total == drained[-1].histogram(PUBLISH).total


def test_a_run_that_never_completes_an_interval_leaves_no_files(tmp_path):
    checkpoint = Checkpoint(JournalWriter(NAME, START), Destination(tmp_path, []))
    Listeners((checkpoint,)).phase("setup")  # then the broker cannot be reached
    checkpoint.finish([])
    assert list(tmp_path.iterdir()) == []


def test_a_failing_write_is_reported_once_and_the_run_goes_on(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("")
    checkpoint = Checkpoint(JournalWriter(NAME, START), Destination(blocked / "out", []))
    listeners = Listeners((checkpoint,))
    listeners.phase("setup")
    first, *others = kept_intervals(3)
    listeners.interval(first, 0)  # a directory that cannot exist: every write fails
    until(lambda: "writing the journal" in caplog.text)
    for stats in others:
        listeners.interval(stats, 0)
    checkpoint.finish([first, *others])  # the writer's last pass: one more write that fails
    assert caplog.text.count("writing the journal") == 1


def test_each_interval_costs_the_same_at_the_3000th_as_at_the_10th(tmp_path):
    """Flat: writing one of the last intervals of a long run takes what one of the first did,
    and nothing stays behind per interval (the intervals are the run's, not the writer's)."""
    one = Spill().keep(interval(1, np.random.default_rng(11)))
    intervals = [one] * 3015  # the same counters and histograms, 3015 times
    writer = JournalWriter(NAME, START)
    writer.write(tmp_path, [])

    def median_write(ends):
        """CPU time, not wall time: on a busy machine the wait for a core dwarfs the work."""
        took = []
        for end in ends:
            so_far = intervals[:end]
            began = time.thread_time()
            writer.write(tmp_path, so_far)
            took.append(time.thread_time() - began)
        return statistics.median(took)

    early = median_write(range(1, 16))
    writer.written = 2985 - 1  # as if the run had gone on: the same files, 2984 intervals in
    late = median_write(range(2985, 3000))
    tracemalloc.start()  # after the timing: tracing slows every allocation it sees
    median_write(range(3000, 3015))
    retained, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert late < early * 3, (early, late)  # rewriting the result grew ~100-fold by then
    assert retained < 15 * 1024, retained  # under 1 KB an interval


def test_compare_and_recover_take_a_journal_or_the_result_it_stands_for(tmp_path):
    journal_of(tmp_path, kept_intervals(5))
    journal = journal_path(tmp_path / NAME)
    rebuilt = result_from_journal(journal)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(rebuilt))
    for new in (journal, tmp_path / NAME):  # the result's own name: only the journal exists
        compared = CliRunner().invoke(cli, ["compare", str(baseline), str(new)])
        assert compared.exit_code == 0, compared.output
    recovered = CliRunner().invoke(cli, ["recover", str(journal)])
    assert recovered.exit_code == 0, recovered.output
    assert json.loads((tmp_path / NAME).read_text()) == rebuilt
    refused = CliRunner().invoke(cli, ["recover", str(baseline)])
    assert isinstance(refused.exception, ConfigError)  # main() makes it exit 2
    assert "not a loadgen journal" in str(refused.exception)


def test_a_line_the_disk_cut_short_is_taken_back(tmp_path, monkeypatch):
    path = tmp_path / "j.journal"
    append_line(path, b'{"first": 1}\n', sync=True)

    write = os.write

    def half(handle, data):  # what a filling disk does: takes part, then refuses the rest
        return write(handle, data[: len(data) // 2])

    monkeypatch.setattr(journal.os, "write", half)
    with pytest.raises(OSError, match="wrote 7 of 14 bytes"):
        append_line(path, b'{"second": 2}\n', sync=True)
    assert path.read_bytes() == b'{"first": 1}\n'
