"""The Python examples: reading results and tables, a run from Python, the pytest SLO suite."""

import json
import re
import sys

import pytest

pytestmark = pytest.mark.e2e

READER = "08-reading-results/read_results.py"


def p99_lines(output: str) -> dict[str, float]:
    """{source: e2e p99 ms} from read_results.py's "e2e p99 from the SOURCE: X ms" lines."""
    return {
        source: float(value)
        for source, value in re.findall(r"^e2e p99 from the (.+): ([\d.]+) ms$", output, re.M)
    }


def test_reading_the_result_json_and_csv_gives_one_p99(example):
    ran = example.run(
        "loadgen", "run", "memory://", "--rate", "2k", "--duration", "2s",
        "--stats-interval", "1s", "--csv", "results/reading/run.csv", "-o", "results/reading",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    done = example.run(sys.executable, example.examples / READER, "results/reading")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agree (3 sources)" in done.stdout
    [doc] = example.results("results/reading")
    figures = p99_lines(done.stdout)
    assert set(figures) == {"csv summary row", "json aggregate", "json histogram"}
    assert figures["json aggregate"] == pytest.approx(doc["aggregatedEndToEndLatency99pct"])
    assert f"run {doc['run']['runId']}" in done.stdout
    assert done.stdout.count("  measured ") == len(doc["publishRate"])  # one line per interval
    try:
        import duckdb  # noqa: F401 - only whether the example's SQL part could run
    except ImportError:
        return
    assert "duckdb over the CSV" in done.stdout and "('summary', 1," in done.stdout


def test_run_from_python_uses_two_processes_and_saves_the_result(example):
    done = example.run(
        sys.executable, example.examples / "09-python-api/run_from_python.py", "out", timeout=90
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads((example.cwd / "out/python-api.json").read_text())
    assert doc["run"]["placement"]["processes"] == 2
    totals = doc["run"]["workerTotals"]
    assert len(totals) == 2 and all(share["sent"] > 0 for share in totals.values())
    assert example.exact(doc)
    assert "end-to-end" in done.stdout and f"sent {doc['totalMessagesSent']}," in done.stdout


@pytest.mark.pipeline
def test_pipeline_tables_hold_the_runs_numbers(example):
    done = example.run(example.examples / "08-reading-results/pipeline.sh", "out", timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [doc] = example.results("out/results")
    run_id = doc["run"]["runId"]
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [row["seq"] for row in rows] == list(range(len(doc["publishRate"])))
    assert {row["run_id"] for row in rows} == {run_id}
    assert sum(row["sent"] for row in rows) > 0
    assert run_id in done.stdout.split("(1 rows)")[0]  # the runs report lists the run
    figures = p99_lines(done.stdout)
    assert figures["pipeline runs table"] == pytest.approx(doc["aggregatedEndToEndLatency99pct"])
    assert "agree (4 sources)" in done.stdout


@pytest.mark.long
def test_pytest_slo_suite_passes_and_an_impossible_slo_fails(example):
    suite = example.examples / "06-pytest-slo"
    pytest_cmd = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", suite)
    passed = example.run(*pytest_cmd, "--loadgen-broker", "kafka", timeout=240)
    if passed.returncode == 0 and "2 skipped" in passed.stdout:
        pytest.skip("the local Kafka (tansu) did not start: the suite skipped its tests")
    assert passed.returncode == 0, passed.stdout[-3000:]
    assert "2 passed" in passed.stdout

    failed = example.run(
        *pytest_cmd, "--loadgen-broker", "kafka", "-k", "small_stream",
        env={"EXAMPLE_E2E_P99_MS": "0.01"}, timeout=240,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "SLO missed:" in failed.stdout
    assert "e2e.p99<=0.01ms: measured " in failed.stdout
    assert "1 failed" in failed.stdout
