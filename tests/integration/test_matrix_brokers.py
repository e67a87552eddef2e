"""A matrix of 2 drivers x 3 rates x 2 key modes on tansu and pulsar-lite, killed and resumed.

The matrix runs as a user runs it (``loadgen matrix`` in a process of its own); it is killed
with SIGKILL (no chance to tidy up) once a few runs are done, then run again.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

pytestmark = pytest.mark.integration

BASE = {
    "name": "keys",
    "topics": 1,
    "partitionsPerTopic": 4,
    "messageSize": 512,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 200,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}
PLAN = {
    "name": "brokers",
    "workload": "base.yaml",
    "drivers": ["kafka.yaml", "pulsar.yaml"],
    "matrix": {"producerRate": [200, 800], "keyDistributor": ["RANDOM_NANO", "NO_KEY"]},
}
POINTS = 2 * 2 * 2  # drivers × rates × key distributors
ARGS = ["-o", "out", "--duration", "1s", "--warmup", "0", "--stats-interval", "1s"]
ARGS += ["--processes", "1", "-q", "--no-report"]


def command():
    return [sys.executable, "-m", "loadgen", "matrix", "plan.yaml", *ARGS]


def test_a_two_broker_matrix_killed_midway_finishes_only_the_missing_runs(
    tmp_path, kafka_broker, pulsar_broker
):
    files = {
        "base.yaml": BASE,
        "plan.yaml": PLAN,
        "kafka.yaml": {"name": "Kafka", "driver": "kafka", **kafka_broker.driver_config},
        "pulsar.yaml": {"name": "Pulsar", "driver": "pulsar", **pulsar_broker.driver_config},
    }
    for name, content in files.items():
        (tmp_path / name).write_text(yaml.safe_dump(content, sort_keys=False))
    out = tmp_path / "out"
    document_path = out / "brokers.matrix.json"

    def complete() -> dict[str, str]:
        if not document_path.exists():
            return {}
        points = json.loads(document_path.read_text())["points"]
        return {e["key"]: e["result"] for e in points if e["status"] == "complete"}

    first = subprocess.Popen(command(), cwd=tmp_path, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(complete()) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(first.pid, signal.SIGKILL)
    first.wait(10)
    done_before = complete()
    assert 3 <= len(done_before) < POINTS
    stamps = {name: (out / name).stat().st_mtime_ns for name in done_before.values()}

    second = subprocess.run(command(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert f"{len(done_before)} runs already complete" in second.stderr
    assert second.stderr.count("== keys ") == POINTS - len(done_before)

    document = json.loads(document_path.read_text())
    assert document["varied"] == ["driver", "producerRate", "keyDistributor"]
    entries = document["points"]
    assert len(entries) == POINTS and all(e["status"] == "complete" for e in entries)
    combos = {
        (e["values"]["driver"], e["values"]["producerRate"], e["values"]["keyDistributor"])
        for e in entries
    }
    assert len(combos) == POINTS
    for entry in entries:
        result = json.loads((out / entry["result"]).read_text())
        assert result["driver"] == {"kafka": "Kafka", "pulsar": "Pulsar"}[entry["values"]["driver"]]
        assert result["totalMessagesSent"] == result["totalMessagesReceived"] > 0
        assert entry["publishLatency"]["p99"] == result["aggregatedPublishLatency99pct"]
        if entry["key"] in done_before:
            assert entry["result"] == done_before[entry["key"]]
    assert {name: (out / name).stat().st_mtime_ns for name in done_before.values()} == stamps
    table = second.stdout
    assert f"{POINTS} of {POINTS} runs" in table and table.count("complete") == POINTS
    assert (out / "brokers.csv").read_text().count("\n") == POINTS + 1
    page = (out / "brokers.html").read_text()
    assert "<svg" in page and "driver=kafka, keyDistributor=NO_KEY p99" in page
