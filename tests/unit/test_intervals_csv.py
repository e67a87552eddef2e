"""`run --csv`'s file: interval rows, then the summary row ending with the run's verdicts."""

import csv

import pytest

from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.formats.intervals_csv import COLUMNS, FAULT_COLUMNS, write_intervals_csv
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

MEMORY = DriverSpec(name="Memory", kind="memory")
VERDICTS = ("rate_held", "consumers_kept_up", "drain_completed", "faults_recovered")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    workload = Workload.model_validate(
        {
            "name": "csv",
            "topics": 1,
            "partitionsPerTopic": 1,
            "messageSize": 64,
            "subscriptionsPerTopic": 1,
            "consumerPerSubscription": 1,
            "producersPerTopic": 1,
            "producerRate": 1000,
            "testDurationMinutes": 1,
            "warmupDurationMinutes": 0,
        }
    )
    options = RunOptions(duration_s=3, warmup_s=0, stats_interval_s=1)
    return run_one(RunRequest(workload, MEMORY, options, out_dir=tmp_path_factory.mktemp("runs")))


def read(path):
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        return reader.fieldnames, list(reader)


def test_the_verdict_columns_come_last_and_only_the_summary_row_fills_them(report, tmp_path):
    verdicts = report.result["verdicts"]
    path = write_intervals_csv(tmp_path / "run.csv", report.outcome.intervals, 1, verdicts)
    head, rows = read(path)
    assert tuple(head) == COLUMNS and tuple(head[-8:-4]) == VERDICTS
    assert tuple(head[-4:]) == FAULT_COLUMNS  # added after the verdicts
    assert head[:3] == ["phase", "start_ms", "end_ms"]  # the columns before them keep their place
    assert head[-9] == "e2e_from_intended_max_ms"
    *intervals, summary = rows
    assert summary["phase"] == "summary" and len(intervals) >= 2
    assert all(row[column] == "" for row in intervals for column in VERDICTS)
    held, kept_up = verdicts["rate"]["held"], verdicts["consumers"]["keptUp"]
    assert summary["rate_held"] == {True: "true", False: "false", None: ""}[held]
    assert summary["consumers_kept_up"] == {True: "true", False: "false", None: ""}[kept_up]
    assert summary["drain_completed"] == ""  # not a catch-up run
    assert summary["faults_recovered"] == ""  # no faults
    assert all(row[column] == "" for row in rows for column in FAULT_COLUMNS)


def test_a_failed_verdict_is_false_and_no_verdicts_leave_the_cells_empty(report, tmp_path):
    intervals = report.outcome.intervals
    failed = {
        "passed": False,
        "rate": {"held": None, "reason": "no fixed producerRate"},
        "consumers": {"keptUp": False, "reason": "the catch-up drain did not come"},
        "drain": {"completed": False, "reason": "stalled"},
    }
    _, rows = read(write_intervals_csv(tmp_path / "failed.csv", intervals, 1, failed))
    assert [rows[-1][column] for column in VERDICTS] == ["", "false", "false", ""]
    _, rows = read(write_intervals_csv(tmp_path / "none.csv", intervals, 1))
    assert all(row[column] == "" for row in rows for column in VERDICTS)


def test_each_interval_names_the_faults_on_in_it_and_the_summary_their_worst(report, tmp_path):
    intervals = report.outcome.intervals
    middle = intervals[len(intervals) // 2]
    faults = [
        {"startedAt": middle.start_ms + 1, "endedAt": middle.end_ms - 1, "lost": 3,
         "unavailableSeconds": 2.0, "recoverySeconds": 1.5},
        {"startedAt": None, "endedAt": None, "error": "no leader", "lost": None},
    ]  # fmt: skip
    path = write_intervals_csv(tmp_path / "faults.csv", intervals, 1, None, faults[:1])
    _, rows = read(path)
    *each, summary = rows
    assert [row["fault"] for row in each].count("1") == 1 and each[len(intervals) // 2]["fault"]
    assert (summary["fault_unavailable_s"], summary["fault_recovery_s"]) == ("2.0", "1.5")
    assert summary["fault_lost"] == "3"
    _, rows = read(write_intervals_csv(tmp_path / "both.csv", intervals, 1, None, faults))
    assert [rows[-1][column] for column in FAULT_COLUMNS[1:]] == ["", "", ""]  # one not made
