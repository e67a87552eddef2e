"""``amqps://`` against the real rabbitmq-server with a TLS listener and openssl-made certificates.

One node for the module (a second start costs ~5 s), with a TLS listener beside its plain one.
"""

import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from loadgen.driver_api.local.certs import make_certs
from loadgen.driver_api.local.process import free_port
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.rabbitmq.local.server import TlsListener, rabbitmq_installed, start_rabbitmq

pytestmark = pytest.mark.integration

SHIPPED_WORKLOAD = (
    Path(__file__).resolve().parents[2] / "configs/workloads/1-topic-16-partitions-1kb-10k.yaml"
)
SMALL = {"partitionsPerTopic": 2, "producerRate": 200, "warmupDurationMinutes": 0}
REFUSAL_DEADLINE_S = 15.0


@pytest.fixture(scope="module")
def tls_node(test_certs):
    if not rabbitmq_installed():
        unavailable("rabbitmq-server is not installed")
    tls = TlsListener(free_port(), test_certs.ca, test_certs.server.cert, test_certs.server.key)
    broker = start_rabbitmq(tls=tls)
    try:
        yield tls
    finally:
        broker.stop()


def amqps(tls, host="localhost", **query):
    text = "&".join(f"{key}={quote(str(value))}" for key, value in query.items())
    return f"amqps://guest:guest@{host}:{tls.port}/%2F" + (f"?{text}" if text else "")


def loadgen(*args, cwd):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, time.monotonic() - started


def write_run_files(tmp_path, uri, **driver):
    config = {"name": "RabbitMQ", "driver": "rabbitmq", "amqpUris": [uri], **driver}
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(config))
    workload = yaml.safe_load(SHIPPED_WORKLOAD.read_text()) | SMALL
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(workload))


def test_a_run_over_amqps_with_a_client_certificate_receives_every_message(
    tls_node, test_certs, tmp_path
):
    tls = {
        "cacertfile": str(test_certs.ca),
        "certfile": str(test_certs.client.cert),
        "keyfile": str(test_certs.client.key),
    }
    write_run_files(tmp_path, amqps(tls_node), tls=tls, producerCreationDelay=0)
    run, _ = loadgen(
        "run", "-d", "driver.yaml", "workload.yaml", "--duration", "3s", "--plain",
        "--stats-interval", "1s", "-o", "out", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    [result] = (tmp_path / "out").glob("*.json")
    totals = json.loads(result.read_text())
    assert totals["totalPublishErrors"] == 0
    assert totals["totalMessagesSent"] > 300
    assert totals["totalMessagesReceived"] == totals["totalMessagesSent"]


@pytest.fixture(scope="module")
def other_certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("other"), ca_name="another-ca")


@pytest.mark.parametrize(
    "host, query, reason",
    [
        ("localhost", {}, "self-signed certificate in certificate chain"),
        ("127.0.0.1", {"server_name_indication": "wrong.example"}, "Hostname mismatch"),
        # TLS 1.3: the server's alert comes after the client's handshake, or is lost in the close
        ("localhost", {"certfile": "other", "keyfile": "other"}, "UNKNOWN_CA|SSLEOFError"),
    ],
    ids=["system CAs only", "wrong hostname", "client cert of another CA"],
)
def test_a_tls_refusal_is_exit_7_naming_tls_and_the_address(
    tls_node, test_certs, other_certs, tmp_path, host, query, reason
):
    """The client checks the server's CA and name; the server checks the client's CA (which
    also shows that the client certificate is sent)."""
    if query:
        stranger = {"certfile": other_certs.client.cert, "keyfile": other_certs.client.key}
        query = {"cacertfile": test_certs.ca, **query} | {
            key: stranger[key] for key, value in query.items() if value == "other"
        }
    uri = amqps(tls_node, host, **query)
    write_run_files(tmp_path, uri)
    run, seconds = loadgen(
        "run", "-d", "driver.yaml", "workload.yaml", "--duration", "3s", "--plain",
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 7, run.stderr[-3000:]
    assert seconds < REFUSAL_DEADLINE_S
    assert "TLS handshake failed" in run.stderr
    assert any(one in run.stderr for one in reason.split("|")), run.stderr[-2000:]
    assert f"{host}:{tls_node.port}" in run.stderr and "guest:guest" not in run.stderr


def test_probe_takes_the_ca_from_the_url_query(tls_node, test_certs, tmp_path):
    uri = amqps(tls_node, cacertfile=test_certs.ca)
    probe, _ = loadgen("probe", uri, "--duration", "2s", "--json", cwd=tmp_path)
    assert probe.returncode == 0, probe.stderr[-3000:]
    summary = json.loads(probe.stdout.splitlines()[-1])
    assert summary["sent"] > 0 and summary["received"] == summary["sent"]


def test_probe_takes_the_tls_settings_from_a_driver_file(tls_node, test_certs, tmp_path):
    tls = {"cacertfile": str(test_certs.ca), "server_name_indication": "localhost"}
    write_run_files(tmp_path, "amqps://ignored", tls=tls)
    uri = amqps(tls_node, "127.0.0.1")
    probe, _ = loadgen(
        "probe", uri, "-d", "driver.yaml", "--duration", "2s", "--json", cwd=tmp_path
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    summary = json.loads(probe.stdout.splitlines()[-1])
    assert summary["sent"] > 0 and summary["received"] == summary["sent"]
