"""Catch-up and consumer-only runs through the CLI, split over worker processes."""

import json
from pathlib import Path

import pytest
from tests.e2e.test_cli import loadgen

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"

MIXED = """
name: mixed
topics: 2
partitionsPerTopic: 2
messageSize: 1024
subscriptionsPerTopic: 2
tailingSubscriptionsPerTopic: 1
producersPerTopic: 1
consumerPerSubscription: 1
producerRate: 10000
consumerBacklogSizeGB: 0.01
testDurationMinutes: 0.05
warmupDurationMinutes: 0
"""


def test_a_mixed_run_over_two_worker_processes_pauses_only_catch_up_consumers(tmp_path):
    (tmp_path / "mixed.yaml").write_text(MIXED)
    done = loadgen(
        "run",
        "-d",
        str(MEMORY),
        "mixed.yaml",
        "--processes",
        "2",
        "--stats-interval",
        "1s",
        "-q",
        "--no-report",
        "-o",
        "out",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "Catch-up: backlog" in done.stderr and "drained in" in done.stderr
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert len(result["run"]["workers"]) == 2
    block = result["catchUp"]
    assert block["targetReached"] and block["drained"]
    build = block["phases"]["build"]
    assert build["tailingReadRate"] == pytest.approx(build["publishRate"], rel=0.05)
    # paused: what a catch-up consumer still reads is the deliveries in flight when it paused,
    # over a build phase of a few seconds (1.08 % on a slow day): an unpaused one reads ~100 %
    assert build["catchUpReadRate"] < 0.05 * build["publishRate"]
    assert result["totalMessagesReceived"] == 2 * result["totalMessagesSent"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--existing-topics", "a,,b"], "--existing-topics"),
        (["--catch-up-timeout", "0"], "--catch-up-timeout"),
    ],
)
def test_bad_scenario_options_exit_2_naming_the_option(tmp_path, args, named):
    (tmp_path / "mixed.yaml").write_text(MIXED)
    done = loadgen("run", "-d", str(MEMORY), "mixed.yaml", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr


def test_a_consumer_only_run_without_topics_to_read_exits_2(tmp_path):
    (tmp_path / "reader.yaml").write_text(
        MIXED.replace("producersPerTopic: 1", "producersPerTopic: 0")
        .replace("consumerBacklogSizeGB: 0.01", "consumerBacklogSizeGB: 0")
        .replace("tailingSubscriptionsPerTopic: 1\n", "")
    )
    done = loadgen("run", "-d", str(MEMORY), "reader.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "producersPerTopic" in done.stderr and "--existing-topics" in done.stderr
