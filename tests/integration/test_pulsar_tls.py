"""A ``pulsar+ssl://`` driver file's TLS settings really reach the Pulsar client's handshake.

pulsar-lite serves no TLS (its binary links no TLS library) and ignores authentication, so
the handshake is checked against a TLS server on 127.0.0.1: the client, opened by the
driver's own :func:`open_client` from OMB's ``client`` fields, must trust it through
``tlsTrustCertsFilePath`` and refuse it under another CA unless ``tlsAllowInsecureConnection``.
"""

import time

import pytest

from harness.tls_server import NO_CLIENT_CERT, TlsServer
from loadgen.driver_api.local.certs import make_certs
from loadgen.spec import parse_model

pulsar = pytest.importorskip("pulsar")
from loadgen_drivers.pulsar.client import open_client  # noqa: E402
from loadgen_drivers.pulsar.config import ClientConfig  # noqa: E402

pytestmark = pytest.mark.integration
SETTLE_S = 5.0


def connect(server, trust, insecure=False) -> None:
    """Let a client from OMB's fields try a lookup, until the server heard from it."""
    fields = {
        "serviceUrl": f"pulsar+ssl://localhost:{server.port}",
        "tlsTrustCertsFilePath": str(trust),
        "tlsAllowInsecureConnection": insecure,
        "tlsEnableHostnameVerification": True,
        "authentication": {
            "plugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "data": "token:not-checked-by-this-server",
        },
    }
    client = open_client(parse_model(ClientConfig, fields, file="pulsar.yaml"), timeout_s=1.0)
    try:
        client.get_topic_partitions("persistent://public/default/tls-check")
    except Exception:  # the server speaks no Pulsar: the lookup fails after the handshake
        pass
    finally:
        client.close()
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and not (server.handshakes or server.failures):
        time.sleep(0.05)


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("other"), ca_name="another-ca").ca


def test_the_trust_file_lets_the_client_finish_the_handshake(test_certs):
    with TlsServer(test_certs, require_client_cert=False) as server:
        connect(server, test_certs.ca)
    assert server.handshakes and server.handshakes[0] == NO_CLIENT_CERT, server.failures


def test_a_server_of_another_ca_is_refused_unless_insecure_is_allowed(test_certs, other_ca):
    with TlsServer(test_certs, require_client_cert=False) as server:
        connect(server, other_ca)
    assert not server.handshakes and server.failures
    with TlsServer(test_certs, require_client_cert=False) as server:
        connect(server, other_ca, insecure=True)
    assert server.handshakes, server.failures
