"""The secured Kafka endpoint (TLS + SASL front before tansu), seen through librdkafka itself.

One endpoint serves the module; the clients are configured only from the driver file it wrote
(translated by loadgen, as a run would be), with one setting changed per failure case. The
failures are what loadgen must classify: librdkafka reports each through ``error_cb`` (polled;
``list_topics`` itself only ends with _TRANSPORT at its timeout).
"""

import base64
import json
import socket
import ssl
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from loadgen.base.errors import LoadgenError, MissingExtra
from loadgen.driver_api.local.certs import expired_server, make_certs, openssl_installed
from loadgen.driver_api.local.process import LocalBroker
from loadgen.driver_api.local.secured import CA_NAME
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.kafka.config import parse_properties, to_librdkafka
from loadgen_drivers.kafka.local.scram import ScramError, ScramServer, make_credential
from loadgen_drivers.kafka.local.secure import start_secure_kafka

pytestmark = pytest.mark.integration

MESSAGES = [f"secured message {i}".encode() for i in range(5)]
ERROR_TIMEOUT_S = 10.0


def skip_unless_startable(config: pytest.Config) -> None:
    """Skip (fail under LOADGEN_REQUIRE_BROKERS=1) when the endpoint cannot run here."""
    selected = config.getoption("--loadgen-broker")
    if selected and "kafka" not in selected:
        pytest.skip(f"kafka is not among --loadgen-broker {' '.join(selected)}")
    if not openssl_installed():
        unavailable("the openssl command is not installed")


def start_or_skip(config: pytest.Config, **options) -> LocalBroker:
    """The endpoint, or a skip (a failure under LOADGEN_REQUIRE_BROKERS=1) when it cannot run."""
    skip_unless_startable(config)
    try:
        return start_secure_kafka(**options)
    except MissingExtra as missing:
        unavailable(str(missing))
    except LoadgenError as error:
        unavailable(f"the secured kafka endpoint did not start: {error}")


@pytest.fixture(scope="module")
def endpoint(request) -> Iterator[LocalBroker]:
    started = start_or_skip(request.config)
    yield started
    started.stop()


def settings(broker: LocalBroker, **changes: str) -> dict[str, str]:
    """librdkafka's settings from the driver file's commonConfig, with ``changes``."""
    common = yaml.safe_load(Path(broker.driver_file).read_text())["commonConfig"]
    translated = to_librdkafka("commonConfig", parse_properties(common), broker.driver_file)
    return {**translated, "log_level": "0", **changes}


def port(broker: LocalBroker) -> int:
    return int(broker.address.rsplit(":", 1)[1])


def first_error(conf: dict[str, str]) -> KafkaError:
    """The first error ``error_cb`` gets while the client is polled."""
    errors: list[KafkaError] = []
    admin = AdminClient({**conf, "error_cb": errors.append})
    started = time.monotonic()
    while not errors and time.monotonic() - started < ERROR_TIMEOUT_S:
        admin.poll(0.02)
    assert errors, "no error reached error_cb"
    return errors[0]


def test_the_server_side_of_scram_reproduces_rfc_7677s_example():
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    users = {"user": make_credential("SCRAM-SHA-256", "pencil", salt, 4096)}
    server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    server = ScramServer("SCRAM-SHA-256", users.get, server_nonce)
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    assert server.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == (
        f"r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    )
    proof = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    final = f"c=biws,r={nonce},p={proof}".encode()
    assert server.final(final) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    other_password = {"user": make_credential("SCRAM-SHA-256", "not pencil", salt, 4096)}
    wrong = ScramServer("SCRAM-SHA-256", other_password.get, server_nonce)
    wrong.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    with pytest.raises(ScramError, match="invalid username or password"):
        wrong.final(final)


def test_the_driver_file_is_a_java_users_file_that_loadgen_validates(endpoint):
    driver_file = Path(endpoint.driver_file)
    assert driver_file.stat().st_mode & 0o777 == 0o600
    assert (driver_file.parent / "users.json").stat().st_mode & 0o777 == 0o600
    fields = yaml.safe_load(driver_file.read_text())
    assert fields == {"name": "kafka-secure-local", "driver": "kafka", **endpoint.driver_config}
    common = parse_properties(fields["commonConfig"])
    assert common["security.protocol"] == "SASL_SSL"
    assert common["sasl.jaas.config"].startswith(
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
    )
    assert "session.timeout.ms=2000" in fields["consumerConfig"]
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "validate", str(driver_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_logs_in_and_messages_arrive_exactly(endpoint, mechanism):
    conf = settings(endpoint, **{"sasl.mechanisms": mechanism})
    topic = f"secure-{mechanism.lower()}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)[topic].result(10)
    producer = Producer({**conf, "linger.ms": "5"})
    for message in MESSAGES:
        producer.produce(topic, message)
    assert producer.flush(10) == 0
    consumer = Consumer({
        **conf, "group.id": f"group-{topic}", "auto.offset.reset": "earliest",
        "session.timeout.ms": "2000", "heartbeat.interval.ms": "500", "fetch.wait.max.ms": "5",
    })  # fmt: skip
    consumer.subscribe([topic])
    received: list[bytes] = []
    deadline = time.monotonic() + 15
    try:
        while len(received) < len(MESSAGES) and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                received.append(message.value())
    finally:
        consumer.close()
    assert received == MESSAGES
    assert f"login: user 'loadgen', mechanism {mechanism}" in Path(endpoint.log_path).read_text()


def test_metadata_and_the_group_coordinator_name_only_the_front(endpoint):
    admin = AdminClient(settings(endpoint))
    brokers = admin.list_topics(timeout=10).brokers.values()
    assert {(broker.host, broker.port) for broker in brokers} == {("127.0.0.1", port(endpoint))}
    group = f"coordinated-{uuid.uuid4().hex[:6]}"
    described = admin.describe_consumer_groups([group])[group].result(10)
    coordinator = described.coordinator
    assert (coordinator.host, coordinator.port) == ("127.0.0.1", port(endpoint))


def test_the_front_answers_api_versions_itself_and_closes_on_anything_else(endpoint):
    v0 = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    v3 = struct.pack(">hhih", 18, 3, 2, 4) + b"test" + b"\x00" + b"\x05test\x021\x00"
    metadata = struct.pack(">hhih", 3, 1, 3, 4) + b"test" + struct.pack(">i", -1)
    ca = Path(endpoint.driver_file).parent / f"{CA_NAME}.pem"
    context = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port(endpoint)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        for request in (v0, v3, metadata):
            tls.sendall(struct.pack(">i", len(request)) + request)
        first, second = read_frame(tls), read_frame(tls)
        assert read_frame(tls) is None  # Metadata before the login: the connection is closed
    (correlation, error, count) = struct.unpack_from(">ihi", first)
    entries = (struct.unpack_from(">hhh", first, 10 + 6 * i) for i in range(count))
    apis = {key: (low, high) for key, low, high in entries}
    assert (correlation, error) == (1, 0)
    assert apis[17] == (1, 1) and apis[36] == (0, 1) and apis[18] == (0, 3) and 0 in apis
    correlation, error, count_plus_one = struct.unpack_from(">ihB", second)
    assert (correlation, error, count_plus_one - 1) == (2, 0, count)


def test_a_sasl_handshake_v0_is_answered_unsupported_version_then_closed(endpoint):
    handshake_v0 = struct.pack(">hhih", 17, 0, 1, 4) + b"test" + struct.pack(">h", 5) + b"PLAIN"
    with front_connection(endpoint) as tls:
        tls.sendall(struct.pack(">i", len(handshake_v0)) + handshake_v0)
        answer = read_frame(tls)
        assert read_frame(tls) is None
    assert struct.unpack_from(">ih", answer) == (1, 35)  # UNSUPPORTED_VERSION
    assert "login refused: SaslHandshake v0" in Path(endpoint.log_path).read_text()


def test_a_long_user_name_is_cut_short_in_the_log_and_the_answer(endpoint):
    name = "u" * 100_000
    handshake = struct.pack(">hhih", 17, 1, 1, 4) + b"test" + struct.pack(">h", 5) + b"PLAIN"
    token = b"\0" + name.encode() + b"\0wrong"
    authenticate = struct.pack(">hhih", 36, 0, 2, 4) + b"test" + struct.pack(">i", len(token))
    with front_connection(endpoint) as tls:
        for request in (handshake, authenticate + token):
            tls.sendall(struct.pack(">i", len(request)) + request)
        read_frame(tls)
        refusal = read_frame(tls)
    shown = repr("u" * 64)
    assert f"for user {shown} (mechanism PLAIN)".encode() in refusal
    log = Path(endpoint.log_path).read_text()
    assert f"login failed: user {shown}, mechanism PLAIN" in log
    assert "u" * 65 not in log


@pytest.mark.parametrize(
    ("client_first", "reason"),
    [
        (b"n,,m=ext,n=user,r=abc", "reserved attribute m="),
        (b"n,,n=us=er,r=abc", "malformed user name"),
        (b"n,a=us=3,n=user,r=abc", "malformed user name"),
        (b"n,,n=user,r=abc,tokenauth=true", "delegation tokens"),
    ],
)
def test_scram_refuses_what_kafka_refuses(client_first, reason):
    users = {"user": make_credential("SCRAM-SHA-256", "pencil")}
    with pytest.raises(ScramError, match=reason):
        ScramServer("SCRAM-SHA-256", users.get).first(client_first)


def front_connection(broker: LocalBroker) -> ssl.SSLSocket:
    """A TLS connection to the front, trusting its CA (close it with ``with``)."""
    ca = Path(broker.driver_file).parent / f"{CA_NAME}.pem"
    context = ssl.create_default_context(cafile=str(ca))
    raw = socket.create_connection(("127.0.0.1", port(broker)), timeout=5)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def read_frame(tls: ssl.SSLSocket) -> bytes | None:
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = tls.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data[4:]


@pytest.mark.parametrize("user", ["loadgen", "nobody"])
def test_a_wrong_password_is_librdkafkas_authentication_error_naming_the_user(endpoint, user):
    wrong = {"sasl.username": user, "sasl.password": "not-the-password"}
    error = first_error(settings(endpoint, **wrong))
    assert error.code() == KafkaError._AUTHENTICATION
    assert (
        "SASL authentication error: Authentication failed: invalid username or password "
        f"for user '{user}' (mechanism SCRAM-SHA-512)"
    ) in error.str()
    log = Path(endpoint.log_path).read_text()
    password = json.loads((Path(endpoint.log_path).parent / "users.json").read_text())["loadgen"]
    assert f"login failed: user '{user}', mechanism SCRAM-SHA-512" in log
    assert "not-the-password" not in log and password not in log


def test_an_unsupported_mechanism_is_refused_at_the_handshake(endpoint):
    conf = settings(endpoint, **{
        "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=loadgen",
    })  # fmt: skip
    for key in ("sasl.username", "sasl.password"):
        conf.pop(key)
    error = first_error(conf)
    assert error.code() == KafkaError._AUTHENTICATION
    assert "Unsupported SASL mechanism" in error.str()
    assert "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" in error.str()
    assert "login refused: mechanism 'OAUTHBEARER'" in Path(endpoint.log_path).read_text()


def test_a_client_that_trusts_another_ca_fails_its_tls_handshake(endpoint, test_certs):
    error = first_error(settings(endpoint, **{"ssl.ca.location": str(test_certs.ca)}))
    assert error.code() == KafkaError._SSL
    assert "certificate verify failed" in error.str()


def test_an_expired_server_certificate_fails_the_tls_handshake(request, tmp_path):
    skip_unless_startable(request.config)
    certs = make_certs(tmp_path / "expired")
    broker = start_or_skip(request.config, log_dir=certs.folder, server=expired_server(certs))
    try:
        error = first_error(settings(broker))
    finally:
        broker.stop()
    assert error.code() == KafkaError._SSL
    assert "certificate verify failed" in error.str()
