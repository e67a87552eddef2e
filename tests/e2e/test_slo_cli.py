"""`--slo` on run, sweep and matrix, and `run --csv`, as a CI job uses them (memory driver)."""

import csv
import json
from pathlib import Path

import pytest
from tests.e2e.test_cli import loadgen
from tests.e2e.test_matrix_cli import BASE, plan_dir
from tests.e2e.test_scenarios_cli import MEMORY

from loadgen.formats.intervals_csv import COLUMNS

pytestmark = pytest.mark.e2e

WORKLOAD = BASE.replace("name: base", "name: slo")
SHORT = ["--warmup", "0", "--stats-interval", "1s", "--processes", "1", "-q"]


def run(tmp_path: Path, *args: str):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    return loadgen("run", "-d", MEMORY, "w.yaml", "-o", "out", *args, cwd=tmp_path)


def only_result(directory: Path) -> dict:
    [path] = directory.glob("*.json")
    return json.loads(path.read_text())


def test_a_run_meeting_every_threshold_exits_0_with_the_verdict_and_a_csv_matching_the_json(
    tmp_path,
):
    done = run(
        tmp_path,
        *["--duration", "2s", *SHORT, "--warmup", "1s", "--no-report", "--csv", "run.csv"],
        *["--slo", "e2e.p99<10s", "--slo", "rate>=0.5", "--slo", "lost==0", "--slo", "errors==0"],
    )
    assert done.returncode == 0, done.stderr
    result = only_result(tmp_path / "out")
    assert result["slo"]["passed"] is True
    assert [c["expr"] for c in result["slo"]["checks"]] == [
        "e2e.p99<10s",
        "rate>=0.5",
        "lost==0",
        "errors==0",
    ]
    e2e_p99_s = result["aggregatedEndToEndLatency99pct"] / 1000
    assert result["slo"]["checks"][0]["measured"] == pytest.approx(e2e_p99_s)
    assert f"slo: pass e2e.p99<10s: measured {e2e_p99_s:.6g} s" in done.stderr
    held = result["verdicts"]["rate"]["held"]  # as the console and the CSV's summary say
    assert ("rate: held" if held else "rate: NOT HELD") in done.stderr

    with (tmp_path / "run.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames) == COLUMNS
        rows = list(reader)
    phases = [row["phase"] for row in rows]
    assert phases[0] == "warmup" and phases[-1] == "summary"
    measured = [row for row in rows if row["phase"] == "measured"]
    assert len(measured) == len(result["publishRate"]) >= 2
    for i, row in enumerate(measured):
        assert float(row["publish_rate"]) == result["publishRate"][i]
        assert float(row["consume_rate"]) == result["consumeRate"][i]
        assert int(row["backlog"]) == result["backlog"][i]
        assert float(row["publish_p50_ms"]) == result["publishLatency50pct"][i]
        assert float(row["publish_p99_ms"]) == result["publishLatency99pct"][i]
        assert float(row["e2e_p99_ms"]) == result["endToEndLatency99pct"][i]
        assert float(row["e2e_p99_9_ms"]) == result["endToEndLatency999pct"][i]
        assert float(row["e2e_max_ms"]) == result["endToEndLatencyMax"][i]
        delay_us = float(row["publish_delay_p99_ms"]) * 1000
        assert delay_us == pytest.approx(result["publishDelayLatency99pct"][i])
    summary = rows[-1]
    assert float(summary["e2e_p99_ms"]) == result["aggregatedEndToEndLatency99pct"]
    assert float(summary["publish_avg_ms"]) == result["aggregatedPublishLatencyAvg"]
    assert int(summary["sent"]) == sum(int(row["sent"]) for row in measured)
    assert summary["rate_held"] == str(held).lower()
    assert sum(int(row["sent"]) for row in rows[:-1]) <= result["totalMessagesSent"]


def test_a_missed_threshold_exits_1_listing_each_failure_with_its_value_in_json_and_report(
    tmp_path,
):
    done = run(
        tmp_path,
        *["--duration", "2s", *SHORT],
        *["--slo", "e2e.p50<1us", "--slo", "publishRate>1e9", "--slo", "errors==0"],
    )
    assert done.returncode == 1, done.stderr
    result = only_result(tmp_path / "out")
    verdict = result["slo"]
    assert verdict["passed"] is False
    assert [c["passed"] for c in verdict["checks"]] == [False, False, True]
    e2e_p50_us = result["aggregatedEndToEndLatency50pct"] * 1000
    assert verdict["checks"][0]["measured"] == pytest.approx(e2e_p50_us)
    rate = verdict["checks"][1]["measured"]
    assert rate == pytest.approx(sum(result["publishRate"]) / len(result["publishRate"]), 0.05)
    assert f"slo: FAIL e2e.p50<1us: measured {e2e_p50_us:.6g} us" in done.stderr
    assert f"slo: FAIL publishRate>1e9: measured {rate:.6g}" in done.stderr
    assert "slo: pass errors==0: measured 0" in done.stderr
    assert "slo: 1 run(s) missed a threshold" in done.stderr
    [page] = (tmp_path / "out").glob("*.html")
    html = page.read_text()
    assert "SLO failed: 2 of 3 threshold(s) missed." in html and "e2e.p50&lt;1us" in html


def test_a_bad_expression_exits_2_before_anything_runs_naming_it_and_the_grammar(tmp_path):
    done = run(tmp_path, "--duration", "2s", *SHORT, "--slo", "e2e.p99<20")
    assert done.returncode == 2
    assert "error: --slo: 'e2e.p99<20': a latency needs a unit" in done.stderr
    assert "STAT: p50, p75" in done.stderr and "OP: <= >= == < >" in done.stderr
    assert not (tmp_path / "out").exists()


def test_csv_takes_one_run_only(tmp_path):
    (tmp_path / "v.yaml").write_text(WORKLOAD)
    done = run(tmp_path, "v.yaml", "--duration", "2s", *SHORT, "--csv", "x.csv")
    assert done.returncode == 2 and "error: --csv: one CSV file holds one run" in done.stderr


def test_a_sweep_judges_every_run_and_exits_1_when_one_missed(tmp_path):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    done = loadgen(
        *["sweep", "w.yaml", "-d", MEMORY, "-o", "out", "--rates", "500,3000"],
        *["--duration", "1s", *SHORT, "--no-report", "--slo", "publishRate<1500"],
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    verdicts = {
        json.loads(path.read_text())["workload"]: json.loads(path.read_text())["slo"]["passed"]
        for path in (tmp_path / "out").glob("slo-rate-*.json")
    }
    assert verdicts == {"slo rate 500": True, "slo rate 3000": False}
    assert "slo: 1 run(s) missed a threshold" in done.stderr


def test_a_matrix_judges_every_point_and_exits_0_when_all_pass(tmp_path):
    plan = """
name: demo
workload: base.yaml
drivers: [memory.yaml]
matrix:
  producerRate: [500, 1k]
"""
    done = loadgen(
        *["matrix", "plan.yaml", "-o", "out", "--duration", "1s", *SHORT, "--no-report"],
        *["--slo", "rate>=0.5", "--slo", "e2e.max<10s"],
        cwd=plan_dir(tmp_path, plan),
    )
    assert done.returncode == 0, done.stderr
    results = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("base-*.json")]
    assert len(results) == 2
    assert all(r["slo"]["passed"] and len(r["slo"]["checks"]) == 2 for r in results)
