"""`loadgen run --before-run/--after-run` as a user types it."""

import json

import pytest
from tests.e2e.test_cli import loadgen
from tests.e2e.test_scenarios_cli import MEMORY

pytestmark = pytest.mark.e2e

WORKLOAD = """
name: hooks
topics: 1
partitionsPerTopic: 1
messageSize: 128
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 1000
testDurationMinutes: 0.03
warmupDurationMinutes: 0
"""


def _run(tmp_path, *hooks: str):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    args = ["run", "-d", str(MEMORY), "w.yaml", "--stats-interval", "1s", "-q", "--no-report"]
    return loadgen(*args, "-o", "out", *hooks, cwd=tmp_path)


def test_hook_output_and_exit_codes_go_into_the_result_and_onto_the_terminal(tmp_path):
    done = _run(
        tmp_path,
        "--before-run",
        "echo cache dropped",
        "--after-run",
        "echo run was $LOADGEN_RUN_STATUS; exit 5",
    )
    assert done.returncode == 0, done.stderr  # the measurement stands; the failure is reported
    assert "after_run `echo run was $LOADGEN_RUN_STATUS; exit 5`: exit 5" in done.stderr
    [path] = (tmp_path / "out").glob("*.json")
    hooks = json.loads(path.read_text())["run"]["hooks"]
    assert [(h["phase"], h["exitCode"], h["output"]) for h in hooks] == [
        ("before_run", 0, "cache dropped"),
        ("after_run", 5, "run was complete"),  # redaction rejoins lines: no final newline
    ]


def test_a_failing_before_run_stops_the_run_with_its_output(tmp_path):
    done = _run(tmp_path, "--before-run", "echo permission denied >&2; exit 1")
    assert done.returncode == 2
    assert "before_run `echo permission denied >&2; exit 1`: exit 1" in done.stderr
    assert "permission denied" in done.stderr and "run was not started" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.glob("out/*.json"))


def test_a_hook_that_outlives_its_timeout_is_killed_and_stops_the_run(tmp_path):
    done = _run(tmp_path, "--before-run", "sleep 60", "--hook-timeout", "1s")
    assert done.returncode == 2
    assert "timed out after 1." in done.stderr
