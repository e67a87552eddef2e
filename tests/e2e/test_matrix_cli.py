"""`loadgen matrix` on the memory driver: plan checks, expansion, repeats, resume, summary."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.e2e.test_cli import loadgen
from tests.e2e.test_scenarios_cli import MEMORY, REPO

pytestmark = pytest.mark.e2e

BASE = """
name: base
topics: 1
partitionsPerTopic: 2
messageSize: 256
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 1000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""
PLAN = """
name: demo
workload: base.yaml
drivers: [memory.yaml]
matrix:
  producerRate: [1k, 2k]
  keyDistributor: [RANDOM_NANO, NO_KEY]
"""
SHORT = ["--duration", "1s", "--warmup", "0", "--stats-interval", "1s", "--processes", "1"]
QUIET = ["-q", "--no-report"]


def plan_dir(tmp_path: Path, plan: str = PLAN) -> Path:
    (tmp_path / "base.yaml").write_text(BASE)
    (tmp_path / "memory.yaml").write_text(MEMORY.read_text())
    (tmp_path / "plan.yaml").write_text(plan)
    return tmp_path


def results(out: Path) -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in out.glob("base-*.json")}


def test_the_cross_product_runs_once_per_point_and_the_summary_holds_each_results_numbers(
    tmp_path,
):
    done = loadgen("matrix", "plan.yaml", "-o", "out", *SHORT, *QUIET, cwd=plan_dir(tmp_path))
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    written = results(out)
    document = json.loads((out / "demo.matrix.json").read_text())
    assert document["varied"] == ["producerRate", "keyDistributor"]
    assert len(written) == len(document["points"]) == document["planned"] == 4
    seen = set()
    for entry in document["points"]:
        result = written[entry["result"]]
        assert entry["status"] == "complete"
        rates = result["publishRate"]
        assert entry["publishRate"] == pytest.approx(sum(rates) / len(rates))
        assert entry["publishLatency"]["p99"] == result["aggregatedPublishLatency99pct"]
        assert entry["endToEndLatency"]["p50"] == result["aggregatedEndToEndLatency50pct"]
        assert result["run"]["workload"]["keyDistributor"] == entry["values"]["keyDistributor"]
        assert entry["rateHeld"] == result["verdicts"]["rate"]["held"]
        assert entry["consumersKeptUp"] == result["verdicts"]["consumers"]["keptUp"]
        seen.add((entry["values"]["producerRate"], entry["values"]["keyDistributor"]))
    assert seen == {(r, k) for r in ("1k", "2k") for k in ("RANDOM_NANO", "NO_KEY")}
    csv_rows = (out / "demo.csv").read_text().splitlines()
    assert len(csv_rows) == 5 and csv_rows[0].startswith("key,producerRate,keyDistributor")
    assert csv_rows[0].endswith(
        ",status,result,verdict,rateHeld,consumersKeptUp,drainCompleted,faultsRecovered"
    )
    page = (out / "demo.html").read_text()
    assert "<svg" in page and "keyDistributor=NO_KEY p99" in page
    assert all(entry["key"] in done.stdout for entry in document["points"])


def test_explicit_points_repeat_and_dry_run_list_without_running(tmp_path):
    plan = """
workload: base.yaml
drivers: [memory.yaml]
points:
  - {producerRate: 500}
  - {producerRate: 800, partitionsPerTopic: 1, driver.pollIntervalMs: 1}
"""
    done = loadgen(
        "matrix", "plan.yaml", "--repeat", "3", "--dry-run", cwd=plan_dir(tmp_path, plan)
    )
    assert done.returncode == 0, done.stderr
    keys = done.stdout.split()
    listed = [line for line in done.stdout.splitlines() if line]
    assert len(listed) == 6 and "6 runs" in done.stderr
    assert {line.split()[0].rsplit("-", 1)[1] for line in listed} == {"r1", "r2", "r3"}
    assert "driver.pollIntervalMs=1" in done.stdout and keys
    assert not (tmp_path / "results").exists()


def test_a_driver_field_varies_only_the_drivers_that_have_it(tmp_path):
    plan = """
workload: base.yaml
drivers: [memory.yaml, kafka.yaml]
matrix:
  producerRate: [1k, 2k]
  driver.pollIntervalMs: [0.5, 1]
"""
    cwd = plan_dir(tmp_path, plan)
    (cwd / "kafka.yaml").write_text((REPO / "configs/drivers/kafka-local.yaml").read_text())
    done = loadgen("matrix", "plan.yaml", "--dry-run", cwd=cwd)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.splitlines()
    assert len(listed) == 6  # memory: 2 rates x 2 intervals; kafka: 2 rates
    assert sum("driver=memory" in line and "pollIntervalMs" in line for line in listed) == 4
    assert sum("driver=kafka" in line and "pollIntervalMs" not in line for line in listed) == 2
    typo = loadgen("matrix", "plan.yaml", "--dry-run", cwd=plan_dir(cwd, plan.replace("Ms", "Mz")))
    assert typo.returncode == 2
    assert "matrix.driver.pollIntervalMz: no driver file of the plan has this field" in typo.stderr


@pytest.mark.parametrize(
    ("plan", "needle"),
    [
        (PLAN.replace("keyDistributor:", "keyDistributer:"), "matrix.keyDistributer"),
        (PLAN.replace("[1k, 2k]", "[1k, fast]"), "matrix.producerRate: 'fast' is not a rate"),
        (PLAN.replace("NO_KEY]", "NO_KEY]\n  driver.pollIntervalMss: [1]"), "pollIntervalMss"),
        (PLAN.replace("base.yaml", "missing.yaml"), "plan.yaml: workload: file not found"),
        (PLAN + "points: [{producerRate: 1}]\n", "either matrix"),
        (PLAN.replace("[1k, 2k]", "[1k, -5]"), "matrix.producerRate"),
        (PLAN.replace("drivers: [memory.yaml]", "drivers: []"), "plan.yaml: drivers"),
    ],
)
def test_a_bad_plan_exits_2_naming_the_file_and_field_before_anything_runs(tmp_path, plan, needle):
    done = loadgen("matrix", "plan.yaml", "-o", "out", *SHORT, *QUIET, cwd=plan_dir(tmp_path, plan))
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_interrupted_matrix_resumes_with_only_the_missing_runs(tmp_path):
    cwd = plan_dir(tmp_path, PLAN.replace("name: demo", "name: demo\nbeforeRun: ['echo hook']"))
    out = tmp_path / "out"
    args = ["matrix", "plan.yaml", "-o", "out", *SHORT[:1], "2s", *SHORT[2:], *QUIET]
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", *args], cwd=cwd, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while len(results(out)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "run the same command again to resume" in stderr
    document = json.loads((out / "demo.matrix.json").read_text())
    complete = {e["key"]: e["result"] for e in document["points"] if e["status"] == "complete"}
    assert 1 <= len(complete) < 4
    before = {name: (out / name).stat().st_mtime_ns for name in complete.values()}

    done = loadgen("matrix", *args[1:], cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert f"{len(complete)} runs already complete" in done.stderr
    assert done.stderr.count("== base") == 4 - len(complete)  # one title line per run
    document = json.loads((out / "demo.matrix.json").read_text())
    assert [e["status"] for e in document["points"]] == ["complete"] * 4
    for entry in document["points"]:
        if entry["key"] in complete:
            assert entry["result"] == complete[entry["key"]]
        hooks = results(out)[entry["result"]]["run"]["hooks"]
        assert hooks[0]["output"] == "hook"
    assert {name: (out / name).stat().st_mtime_ns for name in complete.values()} == before
