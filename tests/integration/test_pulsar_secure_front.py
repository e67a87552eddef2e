"""The secured Pulsar endpoint (pulsar-lite behind loadgen_drivers.pulsar.local.front) as the real
client sees it: TLS, token authentication, lookups that keep the client on the TLS listener.

What pulsar-client reports, measured here: a refused token is no ``AuthenticationError``. The
C++ client closes a connection whose first answer is not CONNECTED (it never reads the ERROR),
retries the lookup and gives up with ``pulsar.Timeout`` when ``operation_timeout_seconds``
runs out, as against a real broker; the front's log line is what tells the refusal apart. A
failed TLS handshake (untrusted CA, expired certificate) is ``pulsar.ConnectError`` at once.
"""

import asyncio
import base64
import hashlib
import hmac
import re
import socket
import ssl
import time
from pathlib import Path

import psutil
import pytest

from loadgen.base.errors import MissingExtra
from loadgen.base.protobuf_wire import LENGTH, VARINT, Field, first, message, text
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.local.certs import expired_server, make_certs, openssl_installed
from loadgen.driver_api.validation import validate_file
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.pulsar.local import commands, front
from loadgen_drivers.pulsar.local.jwt_hs256 import TokenError, make_token, new_secret, verify_token
from loadgen_drivers.pulsar.local.secure import SECRET_FILE, start_secure_pulsar

try:
    import pulsar
except ImportError:
    pulsar = None

pytestmark = pytest.mark.integration

OPERATION_TIMEOUT_S = 1
"""The client's give-up time: a refused token costs exactly this."""
CONNECTION_TIMEOUT_MS = 2000
RECEIVE_TIMEOUT_MS = 5000
LOG_WAIT_S = 3.0
TLS_FAILURE_BOUND_S = 0.5
"""A failed handshake is reported at once (1-2 ms measured): no retry, no timeout."""


def start(**options):
    if pulsar is None:
        unavailable("pulsar-client is not installed (pip install -e '.[pulsar]')")
    if not openssl_installed():
        unavailable("the openssl command is not installed")
    try:
        return start_secure_pulsar(**options)
    except MissingExtra as missing:
        unavailable(str(missing))


@pytest.fixture(scope="module")
def endpoint():
    broker = start()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def client_section(endpoint):
    return endpoint.driver_config["client"]


def token_of(section) -> str:
    return section["authentication"]["data"].removeprefix("token:")


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


def client(section, *, trust=None, token=None, authenticate=True):
    """A bare pulsar-client for the endpoint, failing within seconds; ``token`` replaces the
    endpoint's, ``authenticate=False`` sends none."""
    kwargs = {
        "tls_trust_certs_file_path": str(trust or section["tlsTrustCertsFilePath"]),
        "tls_validate_hostname": True,
        "operation_timeout_seconds": OPERATION_TIMEOUT_S,
        "connection_timeout_ms": CONNECTION_TIMEOUT_MS,
        "io_threads": 1,
        "logger": pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/null"),
    }
    if authenticate:
        kwargs["authentication"] = pulsar.AuthenticationToken(token or token_of(section))
    return pulsar.Client(section["serviceUrl"], **kwargs)


def driver_file_client(endpoint):
    """The client loadgen's Pulsar driver opens from the endpoint's driver YAML."""
    from loadgen_drivers.pulsar.client import open_client
    from loadgen_drivers.pulsar.driver import PulsarDriver

    config = PulsarDriver.validate_config(load_driver_spec(endpoint.driver_file))
    return open_client(config.client, timeout_s=OPERATION_TIMEOUT_S * 5)


def topic(name: str) -> str:
    return f"persistent://public/default/secure-{name}-{time.monotonic_ns()}"


class FrontLog:
    """The front's log lines written after this was made."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.start = self.path.stat().st_size

    def lines(self) -> list[str]:
        return self.path.read_text()[self.start :].splitlines()

    def wait_for(self, pattern: str) -> str:
        deadline = time.monotonic() + LOG_WAIT_S
        while time.monotonic() < deadline:
            found = [line for line in self.lines() if re.search(pattern, line)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} in the front's log: {self.lines()}")


def failure_of(a_client, name: str) -> tuple[Exception, float]:
    """What ``create_producer`` (the call that connects) raises, and after how many seconds."""
    began = time.monotonic()
    try:
        with pytest.raises(pulsar.PulsarException) as raised:
            a_client.create_producer(topic(name))
        return raised.value, time.monotonic() - began
    finally:
        a_client.close()


def exchange(endpoint, produced: list[bytes], name: str, a_client) -> list[bytes]:
    """Subscribe, produce ``produced``, and read back until nothing more comes."""
    try:
        consumer = a_client.subscribe(
            name,
            "secure",
            consumer_type=pulsar.ConsumerType.Shared,
            receiver_queue_size=200,
            initial_position=pulsar.InitialPosition.Earliest,
        )
        producer = a_client.create_producer(name)
        for payload in produced:
            producer.send(payload)
        received = [consumer.receive(RECEIVE_TIMEOUT_MS).data() for _ in produced]
        with pytest.raises(pulsar.Timeout):
            received.append(consumer.receive(200).data())
        assert_stays_on_the_front(endpoint)
        return received
    finally:
        a_client.close()


def assert_stays_on_the_front(endpoint) -> None:
    """The client (in this process) holds connections to the front and none to pulsar-lite,
    whose port it could only have learnt from a lookup the front did not rewrite."""
    (lite,) = [
        c.laddr.port
        for c in psutil.Process(endpoint.helper_pids[0]).net_connections("tcp")
        if c.status == psutil.CONN_LISTEN
    ]
    peers = {c.raddr.port for c in psutil.Process().net_connections("tcp") if c.raddr}
    assert port_of(endpoint.address) in peers
    assert lite not in peers


def test_the_driver_file_validates_and_its_client_produces_and_consumes(endpoint):
    assert validate_file(endpoint.driver_file) == "driver"
    log = FrontLog(endpoint.log_path)
    produced = [f"message-{i}".encode() for i in range(20)]
    received = exchange(endpoint, produced, topic("partitioned"), driver_file_client(endpoint))
    assert sorted(received) == sorted(produced)
    log.wait_for(r"accepted CONNECT subject='loadgen' peer=127\.0\.0\.1:\d+")


def test_a_single_partition_is_reached_through_the_front_too(endpoint, client_section):
    produced = [f"one-{i}".encode() for i in range(5)]
    name = topic("single") + "-partition-3"
    assert sorted(exchange(endpoint, produced, name, client(client_section))) == produced


def test_a_token_signed_with_another_secret_is_refused(endpoint, client_section):
    log = FrontLog(endpoint.log_path)
    wrong = make_token("loadgen", new_secret())
    error, seconds = failure_of(client(client_section, token=wrong), "wrong-token")
    assert isinstance(error, pulsar.Timeout), error
    assert seconds < OPERATION_TIMEOUT_S + 1.5
    line = log.wait_for("refused CONNECT")
    assert "subject='loadgen'" in line and "signature" in line and wrong not in line
    assert not [line for line in log.lines() if "accepted" in line]


def test_a_client_without_a_token_is_refused(endpoint, client_section):
    log = FrontLog(endpoint.log_path)
    error, seconds = failure_of(client(client_section, authenticate=False), "no-token")
    assert isinstance(error, pulsar.Timeout), error
    assert seconds < OPERATION_TIMEOUT_S + 1.5
    assert "subject=unknown" in log.wait_for("refused CONNECT")


def test_a_refusal_is_the_error_a_broker_sends_and_names_the_role_not_the_token(
    endpoint, client_section
):
    secret = (Path(endpoint.temporary_dir) / SECRET_FILE).read_bytes()
    expired = make_token("someone", secret, expires_at=time.time() - 60)
    with tls_connection(endpoint, client_section) as tls:
        tls.sendall(connect_frame(expired))
        reply = commands.parse(receive_frame(tls))
        assert tls.recv(1) == b""  # then the connection is closed
    assert reply.type == commands.ERROR
    error = reply.body(commands.ERROR)
    assert first(error, 1) == 2**64 - 1  # request id -1
    assert first(error, 2) == commands.AUTHENTICATION_ERROR
    assert text(error, 3) == "Failed to authenticate role 'someone': the token has expired"


def test_lookups_name_the_tls_listener(endpoint, client_section):
    with tls_connection(endpoint, client_section) as tls:
        tls.sendall(connect_frame(token_of(client_section)))
        assert commands.parse(receive_frame(tls)).type == 3  # CONNECTED, from pulsar-lite
        lookup = [Field(1, LENGTH, topic("lookup").encode()), Field(2, VARINT, 1)]
        tls.sendall(commands.build([Field(1, VARINT, 23), message(23, lookup)]))
        answer = commands.parse(receive_frame(tls)).body(commands.LOOKUP_RESPONSE)
    assert text(answer, 1) == text(answer, 2) == client_section["serviceUrl"]


def test_a_client_that_does_not_trust_the_ca_fails_the_handshake(
    endpoint, client_section, tmp_path
):
    log = FrontLog(endpoint.log_path)
    other = make_certs(tmp_path, ca_name="another-ca").ca
    error, seconds = failure_of(client(client_section, trust=other), "other-ca")
    assert isinstance(error, pulsar.ConnectError), error
    assert seconds < TLS_FAILURE_BOUND_S
    time.sleep(0.2)
    assert not [line for line in log.lines() if "CONNECT" in line]


def test_an_expired_server_certificate_fails_the_handshake(tmp_path):
    certs = make_certs(tmp_path)
    broker = start(log_dir=tmp_path, server=expired_server(certs))
    try:
        section = broker.driver_config["client"]
        assert section["tlsTrustCertsFilePath"] == str(certs.ca)
        with pytest.raises(ssl.SSLCertVerificationError, match="certificate has expired"):
            tls_connection(broker, section).close()
        error, seconds = failure_of(client(section), "expired")
        assert isinstance(error, pulsar.ConnectError), error
        assert seconds < TLS_FAILURE_BOUND_S
    finally:
        broker.stop()
    assert Path(broker.log_path).read_text().splitlines()[-1].endswith("stopped")  # on SIGTERM


def test_a_token_round_trips_with_its_subject():
    secret = new_secret()
    assert verify_token(make_token("loadgen", secret), secret) == "loadgen"
    assert verify_token(make_token("x", secret, expires_at=time.time() + 60), secret) == "x"


def test_a_tampered_token_is_rejected_with_its_subject():
    secret = new_secret()
    header, _, signature = make_token("loadgen", secret).split(".")
    forged = f"{header}.{make_token('admin', secret).split('.')[1]}.{signature}"
    with pytest.raises(TokenError, match="signature") as refused:
        verify_token(forged, secret)
    assert refused.value.subject == "admin"
    with pytest.raises(TokenError, match="signature"):
        verify_token(make_token("loadgen", new_secret()), secret)
    with pytest.raises(TokenError, match="not a JWT"):
        verify_token("not-a-token", secret)


def test_an_expired_token_is_rejected():
    secret = new_secret()
    with pytest.raises(TokenError, match="expired") as refused:
        verify_token(make_token("loadgen", secret, expires_at=time.time() - 1), secret)
    assert refused.value.subject == "loadgen"


def signed(claims: str, secret: bytes, header: str = '{"alg":"HS256"}') -> str:
    """A token over these exact JSON texts, signed with ``secret``."""
    parts = [
        base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode() for text in (header, claims)
    ]
    body = ".".join(parts)
    mac = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return f"{body}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ('{"sub":"a","exp":NaN}', "exp is not a finite number"),
        ('{"sub":"a","exp":Infinity}', "exp is not a finite number"),
        ('{"sub":"a","exp":true}', "exp is not a finite number"),
        ('{"sub":"a","nbf":4102444800}', "not valid yet"),
        ('{"sub":"a","nbf":"soon"}', "nbf is not a finite number"),
        ('{"sub":"a","x":' + "[" * 100_000 + "]" * 100_000 + "}", "names no subject"),
    ],
)
def test_token_times_must_be_finite_and_current_and_bad_json_is_a_refusal(claims, reason):
    secret = new_secret()
    with pytest.raises(TokenError, match=reason):
        verify_token(signed(claims, secret), secret)


def test_only_the_canonical_spelling_of_a_token_is_accepted():
    secret = new_secret()
    token = make_token("loadgen", secret)
    header, claims, signature = token.split(".")
    last_bits_flipped = signature[:-1] + chr(ord(signature[-1]) ^ 1)
    variants = [
        f"{header}.{claims}!.{signature}",
        f"{header}.{claims}.{signature}=",
        f"{header}.{claims}.{last_bits_flipped}",
        f"{header}.{claims}é.{signature}",
    ]
    for variant in variants:
        with pytest.raises(TokenError):
            verify_token(variant, secret)
    assert verify_token(token, secret) == "loadgen"


def test_the_front_decodes_only_frames_that_may_be_lookup_responses(monkeypatch):
    url = "pulsar+ssl://127.0.0.1:6651"
    lookup = commands.build([
        Field(1, VARINT, commands.LOOKUP_RESPONSE),
        message(commands.LOOKUP_RESPONSE, [Field(1, LENGTH, b"pulsar://127.0.0.1:6650")]),
    ])  # fmt: skip
    other = commands.build([Field(1, VARINT, 9), message(9, [Field(1, VARINT, 1)])])
    decoded: list[bytes] = []
    parse = commands.parse
    monkeypatch.setattr(commands, "parse", lambda raw: decoded.append(raw) or parse(raw))

    class Sink:
        def __init__(self) -> None:
            self.written = b""

        def write(self, data: bytes) -> None:
            self.written += data

        async def drain(self) -> None:
            pass

    async def relay() -> bytes:
        reader, sink = asyncio.StreamReader(), Sink()
        reader.feed_data(other * 3 + lookup)
        reader.feed_eof()
        with pytest.raises(asyncio.IncompleteReadError):
            await front._frames(reader, sink, url)
        return sink.written

    written = asyncio.run(relay())
    assert decoded == [lookup]
    assert written.startswith(other * 3) and url.encode() in written[len(other) * 3 :]


def tls_connection(broker, section) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=section["tlsTrustCertsFilePath"])
    raw = socket.create_connection(("127.0.0.1", port_of(broker.address)), timeout=5)
    try:
        return context.wrap_socket(raw, server_hostname="127.0.0.1")
    except OSError:
        raw.close()
        raise


def connect_frame(token: str) -> bytes:
    connect = [
        Field(1, LENGTH, b"loadgen-test"),
        Field(4, VARINT, 20),
        Field(5, LENGTH, b"token"),
        Field(3, LENGTH, token.encode()),
    ]
    return commands.build([Field(1, VARINT, commands.CONNECT), message(commands.CONNECT, connect)])


def receive_frame(tls: ssl.SSLSocket) -> bytes:
    head = _exactly(tls, 4)
    return head + _exactly(tls, int.from_bytes(head, "big"))


def _exactly(tls: ssl.SSLSocket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = tls.recv(size - len(data))
        assert chunk, f"the connection closed after {len(data)} of {size} bytes"
        data += chunk
    return data
