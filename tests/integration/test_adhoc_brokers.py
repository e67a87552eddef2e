"""``loadgen run URL`` on each local broker equals the YAML run its ``--dry-run`` prints.

Each broker's own client settings come in with ``-d`` (test-broker settings, as in
configs/drivers/*-local.yaml); the URL gives the address. Both runs go through the CLI as a user
runs them, one process each, 2 s measured at a rate low enough for the shared cores.
"""

import json
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.integration

FLAGS = ("--rate", "0.3k", "--size", "1KiB", "--partitions", "2", "--duration", "2s")
QUICK = ("--stats-interval", "1s", "--processes", "1", "--quiet", "--no-report")


def loadgen(*args):
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "run", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def only_result(folder):
    (path,) = folder.glob("*.json")
    return json.loads(path.read_text())


def assert_yaml_run_equals_adhoc_run(url, settings, tmp_path):
    driver_file = tmp_path / "settings.yaml"
    driver_file.write_text(yaml.safe_dump(settings))
    adhoc = (url, *FLAGS, "-d", str(driver_file))
    workload_text, driver_text = loadgen(*adhoc, "--dry-run").split("\n---\n")
    (tmp_path / "workload.yaml").write_text(workload_text)
    (tmp_path / "driver.yaml").write_text(driver_text)

    loadgen(*adhoc, *QUICK, "-o", str(tmp_path / "adhoc"))
    loadgen(
        "-d", str(tmp_path / "driver.yaml"), str(tmp_path / "workload.yaml"), *QUICK,
        "-o", str(tmp_path / "yaml"),
    )  # fmt: skip
    from_url, from_yaml = only_result(tmp_path / "adhoc"), only_result(tmp_path / "yaml")

    assert from_url["run"]["workload"] == from_yaml["run"]["workload"]
    assert from_url["run"]["driver"] == from_yaml["run"]["driver"]
    assert from_url["run"]["workload"]["messageSize"] == 1024  # an OMB int in the result
    assert from_url["run"]["workload"]["producerRate"] == 300
    for key in ("workload", "driver", "messageSize", "topics", "partitions"):
        assert from_url[key] == from_yaml[key], key
    for result in (from_url, from_yaml):
        assert result["totalMessagesSent"] == result["totalMessagesReceived"] >= 500
        assert (result["totalLost"], result["totalPublishErrors"]) == (0, 0)
        assert not result["incomplete"]


def test_kafka_url_run_equals_its_yaml(kafka_broker, tmp_path):
    # the local broker's client settings
    settings = {"name": "Kafka", "driver": "kafka", **kafka_broker.driver_config}
    # tansu: no group join (1 s there) with one consumer per subscription; Apache Kafka joins
    if not kafka_broker.server:
        settings["consumerAssignment"] = "assign"
    url = f"kafka://{kafka_broker.address}"
    assert_yaml_run_equals_adhoc_run(url, settings, tmp_path)


def test_rabbitmq_url_run_equals_its_yaml(rabbitmq_broker, tmp_path):
    settings = {"name": "RabbitMQ", "driver": "rabbitmq", **rabbitmq_broker.driver_config}
    # no user-info in the URL: RabbitMQ's default guest account, and nothing to redact
    url = f"amqp://{rabbitmq_broker.address}/%2F"
    assert_yaml_run_equals_adhoc_run(url, settings, tmp_path)


def test_pulsar_url_run_equals_its_yaml(pulsar_broker, tmp_path):
    settings = {"name": "Pulsar", "driver": "pulsar", **pulsar_broker.driver_config}
    url = pulsar_broker.driver_config["client"]["serviceUrl"]
    assert_yaml_run_equals_adhoc_run(url, settings, tmp_path)
