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


def test_an_slo_search_that_no_rate_meets_exits_1_with_its_evidence(tmp_path):
    workload = tmp_path / "search.yaml"
    workload.write_text(TWO_TOPICS + "producerRate: 100\n")
    done = loadgen(
        "sweep", workload, "-d", MEMORY, "--slo-p99", "0.0001", "--slo-metric", "e2e",
        "--search", "1k:4k", "--duration", "1s", "--stats-interval", "1s", "--processes", "1",
        "--quiet", "--no-report", "-o", "out", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "no rate from 1,000 to 4,000 msg/s meets e2e p99 <= 0.0001 ms" in done.stdout
    [summary] = (tmp_path / "out").glob("rates-sweep-Memory-*.json")
    document = json.loads(summary.read_text())
    assert document["slo"] == {
        "metric": "e2e", "p99Ms": 0.0001, "low": 1000, "high": 4000, "highestRate": None,
    }  # fmt: skip
    assert [p["targetRate"] for p in document["points"]] == [4000, 1000]
    assert all(p["failedBecause"].startswith("e2e p99 ") for p in document["points"])


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--rates", "1k", "--slo-p99", "5"], "--rates/--slo-p99"),
        ([], "--rates/--slo-p99"),
        (["--slo-p99", "5"], "--search"),
        (["--slo-p99", "5", "--search", "9k:1k"], "--search"),
        (["--rates", "1k:2k:1"], "--rates"),
    ],
)
def test_bad_sweep_options_exit_2_naming_the_option(tmp_path, args, named):
    workload = tmp_path / "w.yaml"
    workload.write_text(TWO_TOPICS + "producerRate: 100\n")
    done = loadgen("sweep", workload, "-d", MEMORY, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"error: {named}: " in done.stderr
    assert "Traceback" not in done.stderr
