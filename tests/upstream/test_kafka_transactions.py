"""Kafka transactions on Apache Kafka's own transaction coordinator: commit and abort latency
as their own histograms, ``read_committed`` consumers that never read an aborted message (and
``read_uncommitted`` ones that read every one, so the check can fail), and a producer killed
inside a transaction and restarted with its transactional id: every message once, none of
the dead producer's open transaction.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from loadgen.driver_api.stamp import read_prefix
from loadgen_drivers.kafka.config import KafkaConfig
from loadgen_drivers.kafka.driver import TransactionalKafkaProducer
from loadgen_drivers.kafka.local.upstream import start_upstream_kafka

pytestmark = pytest.mark.upstream

WORKLOAD = dict(
    name="transactions", topics=1, partitionsPerTopic=4, messageSize=256, producersPerTopic=1,
    producerRate=2000, subscriptionsPerTopic=1, consumerPerSubscription=2, testDurationMinutes=1,
)  # fmt: skip
PAYLOAD = 64
"""Bytes per message of the restart test: the 32-byte stamp, then who sent it."""


@pytest.fixture(scope="module")
def kafka():
    broker = start_upstream_kafka()
    yield broker
    broker.stop()


def run(kafka, folder: Path, isolation: str, **workload) -> subprocess.CompletedProcess:
    config = dict(kafka.driver_config)
    config["producerConfig"] += "\ntransactional.id=loadgen-test"
    config["consumerConfig"] += f"\nisolation.level={isolation}"
    driver = folder / "driver.yaml"
    driver.write_text(
        yaml.safe_dump(
            {"name": "txn", "driver": "kafka", **config,
             "transactionDurationMs": 200, "transactionAbortRatio": 0.25}
        )
    )  # fmt: skip
    path = folder / "workload.yaml"
    path.write_text(yaml.safe_dump(WORKLOAD | workload))
    return subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(path),
         "--warmup", "2s", "--duration", "5s", "--stats-interval", "1s",
         "-o", str(folder / "out"), "--no-report"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def result_of(done: subprocess.CompletedProcess, folder: Path) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (folder / "out").glob("*.json")
    result = json.loads(path.read_text())
    result["stderr"] = done.stderr
    return result


def test_read_committed_consumers_never_read_a_message_of_an_aborted_transaction(kafka, tmp_path):
    result = result_of(run(kafka, tmp_path, "read_committed"), tmp_path)
    block = result["transactions"]
    assert block["committed"] > 10 and block["aborted"] > 2, block
    assert block["messagesWithdrawn"] > 0 and block["abortedMessagesRead"] == 0
    assert 0 < block["commitLatency"]["50pct"] <= block["commitLatency"]["Max"]
    assert result["totalAbortedRead"] == 0 and not result["lossDetected"]
    assert 0 < result["totalMessagesSent"] == result["totalMessagesReceived"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    assert result["verdicts"]["rate"]["held"], result["verdicts"]["rate"]  # withdrawn count
    assert {"transactionCommit", "transactionAbort"} <= result["histograms"].keys()
    assert len(list((tmp_path / "out").glob("*.transactionCommit.hlog"))) == 1
    assert "Transactions: " in result["stderr"] and "0 of them read" in result["stderr"]


def test_read_uncommitted_consumers_read_every_aborted_message_and_the_run_says_so(kafka, tmp_path):
    result = result_of(run(kafka, tmp_path, "read_uncommitted"), tmp_path)
    block = result["transactions"]
    assert 0 < block["messagesWithdrawn"] == block["abortedMessagesRead"], block
    assert result["totalAbortedRead"] == block["messagesWithdrawn"] and result["lossDetected"]
    assert "read though their transaction aborted" in result["stderr"]


def test_a_window_of_messages_in_flight_is_refused_with_transactions(kafka, tmp_path):
    done = run(kafka, tmp_path, "read_committed", producerMaxInFlight=1)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "producerMaxInFlight cannot be combined with transactions" in done.stderr


CHILD = """
import sys, time
from loadgen_drivers.kafka.config import KafkaConfig
from loadgen_drivers.kafka.driver import KafkaProducer, TransactionalKafkaProducer
bootstrap, topic, first, last, marker, commit = sys.argv[1:7]
config = KafkaConfig.model_validate({
    "commonConfig": {"bootstrap.servers": bootstrap},
    "producerConfig": {"transactional.id": "restarted"},
    "consumerConfig": {}, "transactionDurationMs": 3_600_000})
producer = TransactionalKafkaProducer(
    topic, {"bootstrap.servers": bootstrap, "transactional.id": "restarted"}, config)
for message_id in range(int(first), int(last)):
    producer.send(None, bytes(32) + marker.encode().ljust(32), lambda *_: None, message_id, 0)
    producer.poll(0)
if commit == "commit":
    producer.flush(30)
else:
    KafkaProducer.flush(producer, 30)  # delivered to the log, the transaction left open
print("ready", flush=True)
time.sleep(600)
"""


def send_in_child(bootstrap: str, topic: str, ids: range, marker: str, commit: bool):
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, bootstrap, topic, str(ids.start), str(ids.stop), marker,
         "commit" if commit else "open"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout.readline().strip() == "ready"
    return child


def read_all(bootstrap: str, topic: str, isolation: str, expected: int) -> list[tuple[int, str]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-{isolation}",
         "auto.offset.reset": "earliest", "isolation.level": isolation}
    )  # fmt: skip
    consumer.subscribe([topic])
    read: list[tuple[int, str]] = []
    deadline = time.monotonic() + 60
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < 5:
        for message in consumer.consume(500, 0.5):
            if message.error() is None:
                stamp = read_prefix(message.value())
                read.append((stamp[1], message.value()[32:].decode().strip()))
                quiet_since = time.monotonic()
        if len(read) >= expected and time.monotonic() - quiet_since > 2:
            break
    consumer.close()
    return read


def test_a_producer_restarted_with_its_transactional_id_fences_the_dead_ones_open_transaction(
    kafka,
):
    bootstrap = kafka.driver_config["commonConfig"].split("=", 1)[1]
    topic = "restart-fencing"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    committed = send_in_child(bootstrap, topic, range(0, 100), "first", commit=True)
    committed.send_signal(signal.SIGKILL)
    committed.wait(10)
    zombie = send_in_child(bootstrap, topic, range(100, 200), "zombie", commit=False)
    os.kill(zombie.pid, signal.SIGKILL)  # dies inside its transaction
    zombie.wait(10)
    config = KafkaConfig.model_validate(
        {"commonConfig": {"bootstrap.servers": bootstrap},
         "producerConfig": {"transactional.id": "restarted"}, "consumerConfig": {}}
    )  # fmt: skip
    restarted = TransactionalKafkaProducer(
        topic, {"bootstrap.servers": bootstrap, "transactional.id": "restarted"}, config
    )  # init_transactions fences the zombie and aborts what it left open
    for message_id in range(100, 200):
        restarted.send(None, bytes(32) + b"again".ljust(32), lambda *_: None, message_id, 0)
    assert restarted.flush(30) == 0
    restarted.close()
    committed_reads = read_all(bootstrap, topic, "read_committed", 200)
    assert sorted(i for i, _ in committed_reads) == list(range(200))  # each once
    assert not [i for i, marker in committed_reads if marker == "zombie"]
    uncommitted = read_all(bootstrap, topic, "read_uncommitted", 300)
    assert sum(marker == "zombie" for _, marker in uncommitted) == 100  # they were in the log
