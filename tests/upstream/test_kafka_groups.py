"""KIP-848 consumer groups (``group.protocol=consumer``) on Apache Kafka's own group
coordinator, through members joining and leaving under load: each message read once. The
classic protocol runs the same changes in the Kafka integration tests, on tansu and here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from loadgen_drivers.kafka.local.upstream import start_upstream_kafka

pytestmark = pytest.mark.upstream

WORKLOAD = dict(
    name="kip-848", topics=1, partitionsPerTopic=6, messageSize=256, producersPerTopic=1,
    producerRate=2000, subscriptionsPerTopic=1, consumerPerSubscription=2, testDurationMinutes=1,
    consumerChanges=[{"at": "4s", "join": 1}, {"at": "10s", "leave": 2}],
)  # fmt: skip


@pytest.fixture(scope="module")
def kafka():
    broker = start_upstream_kafka()
    yield broker
    broker.stop()


def test_kip_848_members_joining_and_leaving_under_load_read_each_message_once(kafka, tmp_path):
    config = dict(kafka.driver_config)
    config["consumerConfig"] += "\ngroup.protocol=consumer"
    driver = tmp_path / "driver.yaml"
    driver.write_text(yaml.safe_dump({"name": "kip-848", "driver": "kafka", **config}))
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload),
         "--warmup", "2s", "--duration", "18s", "--stats-interval", "1s",
         "-o", str(tmp_path / "out"), "--no-report"],
        capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    made = [
        (c["join"], c["leave"], c["consumersPerSubscription"]) for c in result["consumerChanges"]
    ]
    assert made == [(1, 0, 3), (0, 2, 1)]
    assert "consumers: joined 1 per subscription at 4s, now 3" in done.stderr
    assert 0 < result["totalMessagesSent"] == result["totalMessagesReceived"]
    assert result["totalLost"] == result["totalDuplicates"] == 0
