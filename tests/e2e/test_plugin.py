"""loadgen's pytest plugin as a user meets it: the example suite, and the benchmark bridge."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def pytest_run(*args, cwd, env=None, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_the_example_suite_passes_against_a_local_kafka():
    done = pytest_run("examples/", "--loadgen-broker", "kafka", "-q", cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout


def test_the_example_suite_fails_readably_when_the_slo_is_impossible():
    done = pytest_run(
        "examples/", "--loadgen-broker", "kafka", "-q", cwd=REPO, env={"EXAMPLE_E2E_P99_MS": "0.01"}
    )
    assert done.returncode == 1
    report = done.stdout
    assert "SLO missed:" in report
    assert "e2e.p99<=0.01ms: measured " in report  # the threshold, with what was measured
    assert "latency (ms)" in report and "end-to-end" in report  # the percentile table
    assert (
        "src/loadgen/running/slo.py" not in report
    )  # the failure points at the test, not the helper


def test_benchmark_runs_carry_the_loadgen_numbers(tmp_path):
    (tmp_path / "test_memory_bench.py").write_text(
        "import loadgen\n\n"
        "def test_memory_stream(loadgen_benchmark):\n"
        "    workload = {'topics': 1, 'partitionsPerTopic': 1, 'messageSize': 64,\n"
        "                'subscriptionsPerTopic': 1, 'consumerPerSubscription': 1,\n"
        "                'producersPerTopic': 1, 'producerRate': 500, 'testDurationMinutes': 1}\n"
        "    result = loadgen_benchmark(workload, loadgen.driver('memory'), duration=1)\n"
        "    assert result.sent == result.received\n"
    )
    saved = tmp_path / "bench.json"
    done = pytest_run("-q", f"--benchmark-json={saved}", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:]
    [bench] = json.loads(saved.read_text())["benchmarks"]
    info = bench["extra_info"]
    assert info["publish_rate"] == pytest.approx(500, rel=0.05)
    assert 0 < info["e2e_p50_ms"] <= info["e2e_p99_ms"] <= info["e2e_max_ms"]
    assert info["sent"] == info["received"] and info["errors"] == 0
    compared = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pytest_benchmark.cli import main; main()",
            "compare",
            str(saved),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert compared.returncode == 0, compared.stderr
    assert "test_memory_stream" in compared.stdout
