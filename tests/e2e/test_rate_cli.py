"""Rate discovery and rate profiles through `loadgen run` with worker processes, as users run it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
TWO_TOPICS = """\
name: rates
topics: 2
partitionsPerTopic: 2
messageSize: 256
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def loadgen(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def only_result(directory):
    [path] = Path(directory).glob("*.json")
    return json.loads(path.read_text())


def test_rate_discovery_adjusts_the_rate_across_worker_processes(tmp_path):
    workload = tmp_path / "discover.yaml"
    workload.write_text(TWO_TOPICS + "producerRate: 0\n")
    done = loadgen(
        "run", "-d", MEMORY, workload, "--processes", "2", "--duration", "7s",
        "--stats-interval", "1s", "--plain", "--no-report", "-o", "out", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = only_result(tmp_path / "out")
    history = result["rateDiscovery"]["history"]
    assert [change["rate"] for change in history] == [10_000, 20_000, 40_000]
    assert result["run"]["workers"] and len(result["run"]["workers"]) == 2
    # the total rate is split over both workers, and both follow each adjustment
    assert result["publishRate"][0] == pytest.approx(10_000, rel=0.05)
    assert result["publishRate"][4] == pytest.approx(20_000, rel=0.05)
    assert "rate discovery: 40,000 msg/s at the end" in done.stderr


def test_a_rate_profile_runs_across_worker_processes(tmp_path):
    workload = tmp_path / "profile.yaml"
    workload.write_text(
        TWO_TOPICS
        + "producerRateProfile:\n"
        + "  - {rate: 2k, duration: 2s}\n"
        + "  - {rampTo: 6k, duration: 2s}\n"
    )
    done = loadgen(
        "run", "-d", MEMORY, workload, "--processes", "2", "--duration", "5s",
        "--warmup", "1s", "--stats-interval", "1s", "--plain", "--no-report", "-o", "out",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = only_result(tmp_path / "out")
    expected = [2000, 2000, 3000, 5000, 6000]
    assert result["publishRate"] == [pytest.approx(rate, rel=0.06) for rate in expected]
    assert [c["rate"] for c in result["rateProfile"]["history"]] == [2000, 3000, 5000, 6000]


def test_a_bad_profile_exits_2_naming_the_segment_field_and_what_is_allowed(tmp_path):
    workload = tmp_path / "bad.yaml"
    workload.write_text(TWO_TOPICS + "producerRateProfile:\n  - {rate: fast, duration: 2s}\n")
    done = loadgen("run", "-d", MEMORY, workload, cwd=tmp_path)
    assert done.returncode == 2
    assert "producerRateProfile.0.rate: 'fast' is not a rate" in done.stderr
    assert "allowed: a positive number of msg/s" in done.stderr
    assert "Traceback" not in done.stderr
