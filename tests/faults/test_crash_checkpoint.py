"""A run killed without warning (SIGKILL: no handler runs) leaves its last completed interval:
its journal and hlogs, which ``loadgen report`` reads."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadgen.base import hdr
from loadgen.engine.stats import METRICS
from loadgen.formats.hlog import hlog_path
from loadgen.formats.journal import result_from_journal

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
WORKLOAD = """\
name: killed
topics: 1
partitionsPerTopic: 2
messageSize: 128
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 2000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def start(tmp_path, seconds):
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(MEMORY), str(tmp_path / "w.yaml")]
    command += ["-o", str(tmp_path / "out"), "--duration", f"{seconds}s", "--stats-interval", "1s"]
    command += ["--processes", "1", "--plain"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def loadgen(*arguments):
    command = [sys.executable, "-m", "loadgen", *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=os.environ)


def wait_for_intervals(child, count):
    seen = 0
    for line in child.stdout:
        seen += "[measure]" in line
        if seen >= count:
            return
    pytest.fail(f"the run ended after {seen} intervals")


def wait_until_written(out, intervals, timeout_s=20.0):
    """Until ``intervals`` are in the journal and every hlog: the journal's own thread writes
    an interval after its console line, by what the disk takes (seconds on a busy machine)."""

    def lines(path):
        return path.read_bytes().count(b"\n") if path.exists() else 0

    def written():
        journals = list(out.glob("*.journal"))
        return bool(journals) and all(
            lines(path) >= header + intervals
            for path, header in [(journals[0], 1)]
            + [(hlog_path(journals[0], metric), 5) for metric in METRICS]
        )

    deadline = time.monotonic() + timeout_s
    while not written():
        assert time.monotonic() < deadline, f"{intervals} intervals not written in {timeout_s} s"
        time.sleep(0.05)


def test_sigkill_mid_run_leaves_the_result_of_the_last_completed_interval(tmp_path):
    child = start(tmp_path, 60)
    wait_for_intervals(child, 3)
    wait_until_written(tmp_path / "out", 3)
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    out = tmp_path / "out"
    assert not list(out.glob("*.json"))  # no result: the journal has it
    [journal] = out.glob("*.journal")
    result = result_from_journal(journal)
    assert result["incomplete"] is True and result["stopReason"] == "unfinished"
    assert "killed or crashed" in result["run"]["stopDetail"]
    intervals = len(result["publishRate"])
    assert intervals >= 3
    # what it holds adds up: the counts of its intervals are the whole-run totals so far
    assert result["totalMessagesSent"] >= 2000 * (intervals - 1)
    period_counts = [
        hdr.decode("publish", text).total for text in result["histograms"]["publish"]["periods"]
    ]
    assert sum(period_counts) == result["totalMessagesSent"]
    for metric in METRICS:
        log = hlog_path(journal, metric).read_text()
        assert log.count("\n") >= 5 + intervals  # the header, then a line per interval
    assert not list(out.glob(".*"))  # no temporary file left behind

    done = loadgen("report", journal, "-o", tmp_path / "killed.html")
    assert done.returncode == 0, done.stderr
    assert "killed.html" in done.stdout
    page = (tmp_path / "killed.html").read_text()
    assert "unfinished" in page and f"{result['totalMessagesSent']:,}" in page


def test_a_finished_run_replaces_its_checkpoints_with_the_result(tmp_path):
    child = start(tmp_path, 3)
    output = child.communicate(timeout=60)[0]
    assert child.returncode == 0, output
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert "incomplete" not in result or result["incomplete"] is False
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == sorted(
        [path.name, path.with_suffix(".html").name]
        + [hlog_path(path, metric).name for metric in METRICS]
    )
