"""The stores a Kafka driver file names really reach librdkafka's TLS handshake.

tansu 0.6.0 cannot serve TLS (its ``--cert`` listener still speaks plain Kafka) nor SASL users,
so the handshake is checked against a TLS server on 127.0.0.1 that demands a client
certificate: librdkafka, configured only through :func:`to_librdkafka`, must verify the server
with the truststore's CA and present the keystore's certificate. ``loadgen probe kafka+ssl://``
must take the driver file's truststore and name a TLS refusal.
"""

import subprocess
import sys
import time

import pytest
import yaml
from confluent_kafka import Producer

from harness.tls_server import TlsServer
from loadgen.driver_api.local.certs import make_certs
from loadgen_drivers.kafka.config import to_librdkafka

HANDSHAKE_TIMEOUT_S = 10.0


def java_ssl(keystore, truststore) -> dict[str, str]:
    return {
        "security.protocol": "SSL",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": "kspass",
        "ssl.keystore.type": "PKCS12",
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": "tspass",
        "ssl.truststore.type": "PKCS12",
    }


def wait_for(condition, timeout_s: float = HANDSHAKE_TIMEOUT_S) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.integration
def test_librdkafka_presents_the_pkcs12_keystore_and_trusts_the_pkcs12_truststore(test_certs):
    settings = java_ssl(
        test_certs.pkcs12(test_certs.client, "kspass", "tls-client"),
        test_certs.truststore("tspass", "tls-trust"),
    )
    with TlsServer(test_certs) as server:
        producer = Producer({
            **to_librdkafka("commonConfig", settings, "k.yaml"),
            "bootstrap.servers": f"127.0.0.1:{server.port}", "log_level": 0,
        })  # fmt: skip
        seen = wait_for(lambda: producer.poll(0.05) is not None and server.handshakes)
        assert seen, f"no client certificate reached the server: {server.failures}"
        assert server.handshakes[0] == "loadgen-client"


@pytest.mark.integration
def test_librdkafka_refuses_a_server_the_truststore_does_not_vouch_for(test_certs, tmp_path):
    other = make_certs(tmp_path / "other", ca_name="another-ca")
    settings = java_ssl(
        test_certs.pkcs12(test_certs.client, "kspass", "tls-client-2"),
        other.truststore("tspass", "other-trust"),
    )
    errors: list[str] = []
    with TlsServer(test_certs) as server:
        producer = Producer({
            **to_librdkafka("commonConfig", settings, "k.yaml"),
            "bootstrap.servers": f"127.0.0.1:{server.port}", "log_level": 0,
            "error_cb": lambda error: errors.append(error.str()),
        })  # fmt: skip
        assert wait_for(lambda: producer.poll(0.05) is not None and errors)
        assert not server.handshakes
    assert "certificate verify failed" in " ".join(errors), errors


def probe(url, driver_file, cwd):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", "probe", url, "-d", str(driver_file), "--duration", "1s"],
        cwd=cwd, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.integration
def test_probe_on_kafka_ssl_uses_the_files_truststore_and_names_a_tls_refusal(test_certs, tmp_path):
    other = make_certs(tmp_path / "other", ca_name="another-ca")
    driver = {"name": "Kafka", "driver": "kafka", "producerConfig": {}, "consumerConfig": {}}
    for name, certs in (("ours", test_certs), ("theirs", other)):
        store = certs.truststore("tspass", f"probe-{name}")
        common = {"ssl.truststore.location": str(store), "ssl.truststore.password": "tspass"}
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(driver | {"commonConfig": common}))
    with TlsServer(test_certs, require_client_cert=False) as server:
        url = f"kafka+ssl://localhost:{server.port}"
        trusted = probe(url, tmp_path / "ours.yaml", tmp_path)
        assert server.handshakes  # TLS came up; the server speaks no Kafka, so: unreachable
        assert trusted.returncode == 3 and "SSL handshake failed" not in trusted.stderr
        started = time.monotonic()
        refused = probe(url, tmp_path / "theirs.yaml", tmp_path)
    assert refused.returncode == 7 and time.monotonic() - started < 15
    assert f"kafka broker at localhost:{server.port}: TLS handshake failed" in refused.stderr
    assert (
        "SSL handshake failed" in refused.stderr and "certificate verify failed" in refused.stderr
    )
    assert "tspass" not in refused.stderr + trusted.stderr
