"""The shell-script examples: a worker pair, a probe for cron, a report and compare of two runs."""

import re

import pytest

pytestmark = pytest.mark.e2e


def test_worker_pair_merges_both_workers_into_one_exact_result(example):
    done = example.run(example.examples / "05-worker-pair/worker-pair.sh", "out", timeout=90)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [doc] = example.results("out")
    workers = doc["run"]["workers"]
    assert len(workers) == 2 and all(url.startswith("http://127.0.0.1:") for url in workers)
    totals = doc["run"]["workerTotals"]
    assert set(totals) == set(workers)
    assert all(share["sent"] > 0 for share in totals.values())  # both workers carried load
    assert sum(share["sent"] for share in totals.values()) == doc["totalMessagesSent"]
    assert sum(share["received"] for share in totals.values()) == doc["totalMessagesReceived"]
    assert example.exact(doc)
    assert doc["verdicts"]["rate"]["held"]


PROBE = "07-probe-cron/probe-check.sh"
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ memory:// (OK|BREACH) e2e_ms p50=")


def test_probe_wrapper_logs_each_run_and_fails_on_a_breach(example):
    script = example.examples / PROBE
    quick = {"PROBE_DURATION": "1s"}
    ok = example.run(script, "memory://", "probe.log", env={**quick, "PROBE_MAX_P99_MS": "500"})
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == ""  # nothing for cron to mail
    breach = example.run(
        script, "memory://", "probe.log", env={**quick, "PROBE_MAX_P99_MS": "0.0001"}
    )
    assert breach.returncode == 1
    assert "BREACH" in breach.stderr and "e2e.p99<=0.0001ms: measured" in breach.stderr

    first, second = (example.cwd / "probe.log").read_text().splitlines()
    assert LINE.match(first) and " OK " in first
    assert LINE.match(second) and " BREACH " in second and "measured" in second


def test_probe_crontab_line_runs_the_wrapper_every_five_minutes(example):
    lines = (example.examples / "07-probe-cron/crontab.txt").read_text().splitlines()
    [entry] = [line for line in lines if line.startswith("*/5 ")]
    minute, hour, day, month, weekday, *command = entry.split()
    assert (minute, hour, day, month, weekday) == ("*/5", "*", "*", "*", "*")
    assert any(part.endswith(PROBE) for part in command)
    assert any(line.startswith("PATH=") for line in lines)  # cron's PATH lacks loadgen


@pytest.mark.long  # two runs and a report: with the other long runs
def test_report_and_compare_flag_the_slower_run(example):
    done = example.run(example.examples / "11-report-compare/report-compare.sh", "out", timeout=90)
    # the script's exit code is the gate's: the slow-poll run regressed
    assert done.returncode == 1, done.stderr[-2000:]
    itself, against = done.stdout.split("== the slow-poll run against the baseline")
    assert "REGRESSION" not in itself
    regressed = [line for line in against.splitlines() if line.endswith("REGRESSION")]
    assert any(line.startswith("end-to-end p50") for line in regressed)
    assert any(line.startswith("end-to-end p99 ") for line in regressed)
    page = (example.cwd / "out/report.html").read_text()
    assert "Memory slow poll" in page and "<svg" in page
    docs = example.results("out")
    assert sorted(doc["driver"] for doc in docs) == ["Memory", "Memory slow poll"]
    assert all(example.exact(doc) for doc in docs)
