"""The Kafka driver against Apache Kafka's own code paths that tansu and loadgen's SASL front
stand in for: every SASL mechanism Kafka's listener offers (its PLAIN callback, its SCRAM
credentials), a refused PLAIN login, and KIP-848 consumer groups (``group.protocol=consumer``),
each with exact counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loadgen_drivers.kafka.local.driver_file import jaas_quoted
from loadgen_drivers.kafka.local.upstream import start_upstream_kafka

pytestmark = pytest.mark.upstream

WORKLOAD = dict(
    name="clients", topics=1, partitionsPerTopic=4, messageSize=256, producersPerTopic=1,
    producerRate=1000, subscriptionsPerTopic=1, consumerPerSubscription=2, testDurationMinutes=1,
)  # fmt: skip
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@pytest.fixture(scope="module")
def secured():
    broker = start_upstream_kafka(secure=True)
    yield broker
    broker.stop()


def driver_file(folder: Path, config: dict, mechanism: str, password: str) -> Path:
    """The printed driver file with another SASL mechanism and password."""
    lines = []
    for line in config["commonConfig"].splitlines():
        key = line.split("=", 1)[0]
        if key == "sasl.mechanism":
            line = f"sasl.mechanism={mechanism}"
        elif key == "sasl.jaas.config":
            line = (
                f'sasl.jaas.config={LOGIN_MODULES[mechanism]} required username="loadgen" '
                f'password="{jaas_quoted(password)}";'
            )
        lines.append(line)
    path = folder / f"{mechanism}.yaml"
    document = {"name": mechanism, "driver": "kafka", **config, "commonConfig": "\n".join(lines)}
    path.write_text(yaml.safe_dump(document))
    return path


def password_of(config: dict) -> str:
    return config["commonConfig"].split('password="')[1].split('"')[0]


def run(driver: Path, folder: Path) -> subprocess.CompletedProcess:
    workload = folder / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    return subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload),
         "--warmup", "2s", "--duration", "5s", "--stats-interval", "1s",
         "-o", str(folder / "out"), "--no-report"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def exact(done: subprocess.CompletedProcess, folder: Path) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (folder / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert 0 < result["totalMessagesSent"] == result["totalMessagesReceived"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    return result


@pytest.mark.parametrize("mechanism", sorted(LOGIN_MODULES))
def test_each_sasl_mechanism_of_kafkas_listener_logs_in_and_counts_exactly(
    secured, mechanism, tmp_path
):
    config = secured.driver_config
    exact(run(driver_file(tmp_path, config, mechanism, password_of(config)), tmp_path), tmp_path)


def test_kafkas_plain_callback_refuses_a_wrong_password_as_exit_4(secured, tmp_path):
    done = run(driver_file(tmp_path, secured.driver_config, "PLAIN", "wrong"), tmp_path)
    assert done.returncode == 4, done.stderr[-2000:]
    assert "refused the login of user 'loadgen'" in done.stderr


def test_kip_848_consumer_groups_share_the_partitions_and_count_exactly(secured, tmp_path):
    config = dict(secured.driver_config)
    config["consumerConfig"] += "\ngroup.protocol=consumer"
    path = driver_file(tmp_path, config, "SCRAM-SHA-512", password_of(config))
    result = exact(run(path, tmp_path), tmp_path)
    assert "group.protocol=consumer" in result["run"]["driver"]["config"]["consumerConfig"]
