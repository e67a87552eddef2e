"""``loadgen probe`` as an on-call engineer runs it: real brokers, real exit codes."""

import json
import subprocess
import sys
import time

import pytest
import yaml

from harness.timing import run_watched
from loadgen.driver_api.local.process import free_port

pytestmark = pytest.mark.e2e


def probe(*args, timeout=60):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "probe", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, time.monotonic() - started


@pytest.mark.parametrize("scheme", ["kafka", "pulsar", "amqp", "tcp"])
def test_a_closed_port_exits_3_within_2_seconds_naming_the_address(scheme):
    """A refused connection is reported at once, not after the probe's 3 s for a broker to
    answer (which librdkafka and pulsar-client would spend retrying it); timed from the
    probe's first line: the interpreter's start-up before it is not the probe's."""
    address = f"127.0.0.1:{free_port()}"
    done = run_watched([sys.executable, "-m", "loadgen", "probe", f"{scheme}://{address}"])
    assert done.returncode == 3, done.stderr
    assert address in done.stderr and "connection refused" in done.stderr
    assert done.said("error: ") - done.said("probing ") < 2
    assert "Traceback" not in done.stderr


def test_a_breached_p99_exits_1_with_the_breach_and_what_was_measured(kafka_broker):
    done, _ = probe(
        *[f"kafka://{kafka_broker.address}", "--duration", "2s", "--max-p99", "0.001"],
        *["--slo", "publish.max<1us", "--slo", "errors==0"],
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("  BREACH e2e.p99<=0.001ms: measured ")]
    assert [line for line in lines if line.startswith("  BREACH publish.max<1us: measured ")]
    assert not [line for line in lines if "errors==0" in line]
    assert len([line for line in lines if " recv " in line]) == 2  # one line per second


def test_a_bad_slo_expression_exits_2_before_connecting():
    done, _ = probe(f"kafka://127.0.0.1:{free_port()}", "--slo", "e2e.p99<5")
    assert done.returncode == 2, done.stderr
    assert "error: --slo: 'e2e.p99<5': a latency needs a unit" in done.stderr


def test_json_lines_report_every_second_and_a_summary_where_nothing_is_lost(kafka_broker, tmp_path):
    driver_file = tmp_path / "kafka.yaml"
    driver_file.write_text(
        yaml.safe_dump({"name": "local", "driver": "kafka", **kafka_broker.driver_config})
    )
    done, _ = probe(
        f"kafka://{kafka_broker.address}",
        "-d",
        str(driver_file),
        "--rate",
        "200",
        "--duration",
        "3s",
        "--max-p99",
        "10000",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    *seconds, summary = records
    assert [round(r["elapsed_s"]) for r in seconds] == [1, 2, 3]
    assert all(r["publish_ms"]["p99"] is not None for r in seconds)
    assert summary["summary"] is True and summary["breaches"] == []
    assert summary["sent"] == summary["received"] >= 590
    assert summary["errors"] == 0
    assert 0 < summary["e2e_ms"]["p50"] <= summary["e2e_ms"]["p99"] <= summary["e2e_ms"]["max"]


def test_rabbitmq_probe_passes_a_generous_bound(rabbitmq_broker):
    (uri,) = rabbitmq_broker.driver_config["amqpUris"]
    done, _ = probe(uri, "--duration", "2s", "--metric", "publish", "--max-p50", "1000", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["sent"] == summary["received"] > 0
    assert summary["publish_ms"]["p50"] < 1000


def test_a_non_broker_url_exits_2_listing_the_schemes():
    done, _ = probe("http://127.0.0.1:1")
    assert done.returncode == 2
    assert "kafka://host:port" in done.stderr and "Traceback" not in done.stderr


def test_a_named_topic_is_kept_and_a_second_probe_reads_only_its_own_messages(kafka_broker):
    from confluent_kafka.admin import AdminClient

    topic = f"probe-{free_port()}"
    url = f"kafka://{kafka_broker.address}"
    for _ in range(2):  # the second probe finds the first one's messages in the topic
        done, _ = probe(url, "--topic", topic, "--duration", "2s", "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout.splitlines()[-1])
        assert summary["received"] == summary["sent"] > 0
    admin = AdminClient({"bootstrap.servers": kafka_broker.address})
    assert topic in admin.list_topics(timeout=10).topics


def test_a_named_topic_elsewhere_is_refused_naming_the_option(rabbitmq_broker):
    (uri,) = rabbitmq_broker.driver_config["amqpUris"]
    done, _ = probe(uri, "--topic", "mine")
    assert done.returncode == 2
    assert "--topic" in done.stderr and "kafka:// URLs" in done.stderr


def test_pulsar_probe_with_the_local_settings_loses_nothing(pulsar_broker, tmp_path):
    driver_file = tmp_path / "pulsar.yaml"
    driver_file.write_text(
        yaml.safe_dump({"name": "local", "driver": "pulsar", **pulsar_broker.driver_config})
    )
    url = pulsar_broker.driver_config["client"]["serviceUrl"]
    done, _ = probe(url, "-d", str(driver_file), "--duration", "2s", "--json")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["sent"] == summary["received"] > 0 and summary["errors"] == 0
