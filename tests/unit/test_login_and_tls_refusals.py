"""A refused login and a failed TLS handshake are errors of their own kind, with their own exit
codes, naming the user but never the secret; the TLS check says why a handshake fails."""

from __future__ import annotations

import base64
import json
import ssl

import pytest

from harness.tls_server import TlsServer
from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, ConfigError, exit_code_for
from loadgen.base.tls_check import tls_verify_problem
from loadgen.driver_api.local.certs import expired_server, make_certs
from loadgen.driver_api.local.process import free_port
from loadgen_drivers.kafka.trust import trust_context
from loadgen_drivers.pulsar.admin import auth_headers
from loadgen_drivers.pulsar.config import Authentication
from loadgen_drivers.pulsar.handshake import auth_fields, login_refusal
from loadgen_drivers.pulsar.login import login_name


def unsigned_token(claims: dict[str, object]) -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'HS256'})}.{part(claims)}.c2lnbmF0dXJl"


def test_the_kinds_have_exit_codes_of_their_own_and_name_the_user():
    refused = BrokerLoginRefused("kafka", "127.0.0.1:9093", "bench", "invalid credentials")
    failed = BrokerTlsFailed("pulsar", "pulsar+ssl://127.0.0.1:6651", "certificate has expired")
    assert (exit_code_for(refused), exit_code_for(failed)) == (4, 7)
    assert str(refused) == (
        "kafka broker at 127.0.0.1:9093 refused the login of user 'bench': invalid credentials"
    )
    assert str(failed).startswith("pulsar broker at pulsar+ssl://127.0.0.1:6651: TLS handshake")
    anonymous = BrokerLoginRefused("pulsar", "pulsar://h:6650", None)
    assert (
        str(anonymous)
        == "pulsar broker at pulsar://h:6650 refused the login of the credentials given"
    )


@pytest.mark.parametrize(
    ("plugin", "data", "expected"),
    [
        ("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:{jwt}", "bench"),
        ("token", "{jwt}", "bench"),
        ("basic", '{"userId": "alice", "password": "s3cret"}', "alice"),
        ("token", "token:not-a-jwt", None),
        ("tls", "tlsCertFile:/x", None),
        (None, None, None),
    ],
)
def test_the_login_name_is_read_from_the_token_or_the_basic_user(plugin, data, expected):
    jwt = unsigned_token({"sub": "bench"})
    auth = Authentication(plugin=plugin, data=data.replace("{jwt}", jwt) if data else None)
    assert login_name(auth) == expected


def test_a_token_file_is_read_for_its_subject(tmp_path):
    (tmp_path / "token").write_text(unsigned_token({"sub": "from-file"}) + "\n")
    auth = Authentication(plugin="token", data=f"file://{tmp_path / 'token'}")
    assert login_name(auth) == "from-file"


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("other-ca"), ca_name="another-ca")


def trusting(certs) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    context.check_hostname = False
    return context


def test_the_tls_check_names_an_untrusted_ca_and_passes_a_trusted_one(test_certs, other_ca):
    with TlsServer(test_certs, require_client_cert=False) as server:
        address = ("127.0.0.1", server.port)
        assert tls_verify_problem(address, trusting(test_certs)) is None
        problem = tls_verify_problem(address, trusting(other_ca))
    assert problem is not None and problem.startswith("certificate verify failed: ")


def test_the_tls_check_names_an_expired_certificate(test_certs, tmp_path):
    expired = expired_server(test_certs, name="expired-for-check")
    served = type(test_certs)(test_certs.folder, test_certs.ca, expired, test_certs.client)
    with TlsServer(served, require_client_cert=False) as server:
        problem = tls_verify_problem(("127.0.0.1", server.port), trusting(test_certs))
    assert problem == "certificate verify failed: certificate has expired"


@pytest.fixture
def strict_defaults(monkeypatch):
    """Python 3.13's default contexts on any Python: ``VERIFY_X509_STRICT`` set."""
    create = ssl.create_default_context

    def strict(*args, **kwargs) -> ssl.SSLContext:
        context = create(*args, **kwargs)
        context.verify_flags |= ssl.VERIFY_X509_STRICT
        return context

    monkeypatch.setattr(ssl, "create_default_context", strict)


def without_key_usage(certs, folder):
    """``certs`` with the CA certificate made again from its key with basicConstraints only, as
    ``openssl req -x509`` makes one with Debian's openssl.cnf: the clients trust it, Python
    3.13's strict checks do not."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    key = serialization.load_pem_private_key(
        certs.ca.with_suffix(".key").read_bytes(), password=None
    )
    subject = x509.load_pem_x509_certificate(certs.ca.read_bytes()).subject
    now = datetime.datetime.now(datetime.UTC)
    ca = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir()
    (folder / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return type(certs)(folder, folder / "ca.pem", certs.server, certs.client)


def test_the_tls_checks_accept_a_ca_without_key_usage_as_the_clients_do(
    test_certs, tmp_path, strict_defaults
):
    """A check that names a failure adds none: librdkafka and pulsar-client trust this CA."""
    from loadgen_drivers.pulsar.admin import ssl_context
    from loadgen_drivers.pulsar.config import ClientConfig

    lax = without_key_usage(test_certs, tmp_path / "lax")
    kafka = trust_context({"security.protocol": "SSL", "ssl.ca.location": str(lax.ca)})
    pulsar = ssl_context(
        ClientConfig(serviceUrl="pulsar+ssl://127.0.0.1:1", tlsTrustCertsFilePath=str(lax.ca))
    )
    with TlsServer(test_certs, require_client_cert=False) as server:
        address = ("127.0.0.1", server.port)
        assert tls_verify_problem(address, trusting(lax)) is not None  # strict: refused
        assert tls_verify_problem(address, kafka) is None
        assert tls_verify_problem(address, pulsar) is None


def test_the_tls_check_leaves_a_closed_port_to_the_reachability_check(test_certs):
    assert tls_verify_problem(("127.0.0.1", free_port()), trusting(test_certs)) is None


def test_kafkas_trust_settings_become_a_context_and_an_unreadable_ca_adds_no_failure(
    test_certs, tmp_path
):
    tls = {"security.protocol": "SASL_SSL"}
    assert trust_context({"security.protocol": "SASL_PLAINTEXT"}) is None
    from_file = trust_context(tls | {"ssl.ca.location": str(test_certs.ca)})
    assert from_file is not None and from_file.check_hostname
    (tmp_path / "cas").mkdir()
    from_folder = trust_context(tls | {"ssl.ca.location": str(tmp_path / "cas")})
    assert from_folder is not None
    plain = {"ssl.endpoint.identification.algorithm": "none"}
    assert not trust_context(tls | plain | {"ssl.ca.pem": test_certs.ca.read_text()}).check_hostname
    assert trust_context(tls | {"ssl.ca.location": str(tmp_path / "missing.pem")}) is None


@pytest.mark.parametrize(
    ("plugin", "data", "says"),
    [
        ("AuthenticationToken", "file:/nonexistent/token", "No such file"),
        ("basic", '{"userId": "alice", "password": "s3cret"', "cannot be read"),
        ("basic", '{"userId": "alice"}', "has no 'password' field"),
    ],
    ids=["missing token file", "basic not JSON", "basic without password"],
)
def test_login_data_that_cannot_be_read_is_a_config_error_naming_the_field(plugin, data, says):
    auth = Authentication(plugin=plugin, data=data)
    for check in (lambda: login_refusal(("127.0.0.1", 1), auth, None), lambda: auth_headers(auth)):
        with pytest.raises(ConfigError) as caught:
            check()
        assert caught.value.path == "client.authentication.data", caught.value
        assert says in str(caught.value) and "s3cret" not in str(caught.value)


def test_the_login_check_and_the_admin_api_send_the_same_credentials_the_client_would():
    basic = Authentication(plugin="basic", data='{"userId": "alice", "password": "s3cret"}')
    token = Authentication(plugin="AuthenticationToken", data="token:abc.def.ghi")
    assert auth_fields(basic) == ("basic", b"alice:s3cret")
    assert auth_fields(token) == ("token", b"abc.def.ghi")
    assert auth_fields(Authentication(plugin="tls", data="tlsCertFile:/x")) is None
    assert auth_headers(basic) == {"Authorization": "Basic YWxpY2U6czNjcmV0"}
    assert auth_headers(token) == {"Authorization": "Bearer abc.def.ghi"}
