"""Runs that end by themselves and say why (memory driver, through the CLI): a catch-up drain
that cannot come, a rate that is not held, consumers that fall behind."""

import csv
import json
import time
from pathlib import Path

import pytest
from tests.e2e.test_cli import loadgen
from tests.e2e.test_scenarios_cli import MEMORY

pytestmark = pytest.mark.e2e

SLOW_CONSUMERS = """
name: endings
topics: 1
partitionsPerTopic: 1
messageSize: 1024
subscriptionsPerTopic: 1
producersPerTopic: 1
consumerPerSubscription: 1
producerRate: 2000
consumerDelay: 1ms
testDurationMinutes: 1
warmupDurationMinutes: 0
"""
"""Producers at 2,000 msg/s; one consumer that sleeps 1 ms a message reads ~900 msg/s."""
UNDRAINABLE = SLOW_CONSUMERS + "consumerBacklogSizeGB: 0.002\nbacklogDrainRatio: 0.9\n"
"""A 2-MB backlog (~2,000 messages) that the slow consumer can never bring below 1,000."""
SHORT = ("--stats-interval", "1s", "--processes", "1", "--plain", "--no-report")


def run(tmp_path: Path, workload: str, *args: str):
    (tmp_path / "w.yaml").write_text(workload)
    return loadgen("run", "-d", MEMORY, "w.yaml", "-o", "out", *SHORT, *args, cwd=tmp_path)


def only_result(directory: Path) -> dict:
    [path] = directory.glob("*.json")
    return json.loads(path.read_text())


def test_an_undrainable_catch_up_stops_when_its_backlog_stops_shrinking_and_exits_1(tmp_path):
    started = time.monotonic()
    done = run(tmp_path, UNDRAINABLE, "--duration", "60s")
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    # building ~2 s, then the 5-s stall window (3 one-second intervals, floor 5 s), then the
    # end: nowhere near the 10-min catch-up timeout, nor the 60-s measurement it skipped
    assert took < 30, took
    drain = only_result(tmp_path / "out")["verdicts"]["drain"]
    assert drain["completed"] is False and drain["reason"] == "stalled"
    assert drain["windowSeconds"] == 5.0
    assert drain["backlogAtEnd"] > drain["backlogAtStart"]
    assert drain["consumeRate"] < 0.7 * drain["publishRate"]
    assert "cannot drain a backlog growing at" in done.stderr
    assert "drain: NOT COMPLETED" in done.stderr
    result = only_result(tmp_path / "out")
    assert result["totalLost"] == 0 and result["totalUnread"] > 0  # left in the broker, not lost


def test_the_flag_beats_the_workloads_drain_timeout(tmp_path):
    workload = UNDRAINABLE + "backlogDrainTimeout: 1h\n"
    done = run(tmp_path, workload, "--duration", "60s", "--backlog-drain-timeout", "1s")
    assert done.returncode == 1, done.stderr
    drain = only_result(tmp_path / "out")["verdicts"]["drain"]
    assert drain["timeoutSeconds"] == 1.0 and drain["reason"] == "timeout", drain  # < 5-s window
    assert "did not drain within the 1-s timeout" in done.stderr


def test_a_rate_that_cannot_be_held_gets_the_verdict_and_fails_rate_held(tmp_path):
    producer_only = SLOW_CONSUMERS.replace("subscriptionsPerTopic: 1", "subscriptionsPerTopic: 0")
    unreachable = producer_only.replace("producerRate: 2000", "producerRate: 100M")
    done = run(tmp_path, unreachable, "--duration", "2s", "--slo", "rate.held", "--csv", "run.csv")
    assert done.returncode == 1, done.stderr
    rate = only_result(tmp_path / "out")["verdicts"]["rate"]
    assert rate["held"] is False and rate["ratio"] < 0.5
    assert "rate: NOT HELD" in done.stderr and "slo: FAIL rate.held: no" in done.stderr
    with (tmp_path / "run.csv").open() as rows:
        *_, summary = csv.DictReader(rows)
    assert summary["rate_held"] == "false" and summary["consumers_kept_up"] == ""


def test_consumers_that_fall_behind_get_the_verdict_and_the_backlog_growth(tmp_path):
    done = run(
        tmp_path,
        SLOW_CONSUMERS,
        "--duration",
        "3s",
        "--warmup",
        "1s",
        "--slo",
        "consumers.keptUp",
        "--slo",
        "backlog.growth<1000",
        "--drain-timeout",
        "1s",  # the consumers are behind: the end's drain would wait its 10 s for nothing
    )
    assert done.returncode == 1, done.stderr
    verdicts = only_result(tmp_path / "out")["verdicts"]
    consumers = verdicts["consumers"]
    assert consumers["keptUp"] is False and verdicts["passed"] is False
    assert 2000 < consumers["growth"] < 5000  # ~1,100 msg/s over 3 s
    assert 800 < consumers["trend"] < 1500
    assert verdicts["rate"]["held"] is True  # the producers were not the problem
    assert "consumers: FALLING BEHIND" in done.stderr
