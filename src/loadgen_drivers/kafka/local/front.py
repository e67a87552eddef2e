"""A TLS + SASL front for a Kafka broker that has neither (tansu): a secured endpoint for tests.

The front ends TLS, answers the requests a client sends before it is logged in, and after a
successful login relays the connection's bytes unchanged to the broker. Before the login it
answers ApiVersions (v0-v3; the broker's own list, asked once at start, with this front's
SaslHandshake v0-v1 and SaslAuthenticate v0-v1 in place of the broker's), SaslHandshake and
SaslAuthenticate (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512); any other request closes the
connection, as a broker does on an illegal SASL state.

The SASL tokens always travel in SaslAuthenticate requests (KIP-152): librdkafka sends
SaslHandshake v1 and then SaslAuthenticate whenever the broker lists SaslHandshake v1 and
SaslAuthenticate v0, which this front always does (librdkafka 2.16, measured: ApiVersions v3,
SaslHandshake v1, SaslAuthenticate v1). The legacy raw tokens that follow a SaslHandshake v0
are not read, so the front lists SaslHandshake v1 only and answers a v0 handshake with
UNSUPPORTED_VERSION before it closes. tansu lists SaslAuthenticate up to v2 (flexible), which
this front does not speak, hence its own ranges.

Run as ``python -m loadgen_drivers.kafka.local.front --listen H:P --upstream H:P --cert F --key F
--users F``; ``--users`` is a JSON object of user → password. It logs one line per login, with
the user (cut to 64 characters), mechanism and peer (never a password), to stderr and stops on
SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import logging
import ssl
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from loadgen.driver_api.local.front_io import (
    CHUNK,
    host_port,
    pump,
    server_tls,
    shown,
    stop_on_signals,
    until_first_ends,
)
from loadgen_drivers.kafka.local.scram import (
    HASHES,
    Credential,
    ScramError,
    ScramServer,
    make_credential,
)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
NO_ERROR, UNSUPPORTED_SASL_MECHANISM, UNSUPPORTED_VERSION = 0, 33, 35
SASL_AUTHENTICATION_FAILED = 58
OWN_VERSIONS = {API_VERSIONS: (0, 3), SASL_HANDSHAKE: (1, 1), SASL_AUTHENTICATE: (0, 1)}
FLEXIBLE_API_VERSIONS = 3
"""ApiVersions from v3 on is a flexible version (compact arrays, tagged fields)."""
MECHANISMS = ("PLAIN", *HASHES)
MAX_LOGIN_FRAME = 512 * 1024
"""Frames before the login are small; Kafka's brokers cap them at 512 KiB too."""
LOGIN_TIMEOUT_S = 30.0
TLS_HANDSHAKE_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 2.0
CLIENT_ID = b"loadgen-kafka-front"

ApiRanges = dict[int, tuple[int, int]]
log = logging.getLogger("loadgen.kafka_front")


class ProtocolError(Exception):
    """A frame this front cannot read: the connection is closed."""


class LoginFailed(Exception):
    """A refused login; the message is what the client is told, and names no secret."""


@dataclass(frozen=True)
class Request:
    """A request's header fields and its body (for flexible versions, after the client id)."""

    api_key: int
    version: int
    correlation_id: int
    body: bytes


def parse_request(frame: bytes) -> Request:
    """Request header v1/v2: api key, version, correlation id, then a nullable client id."""
    try:
        api_key, version, correlation_id, id_size = struct.unpack_from(">hhih", frame)
    except struct.error:
        raise ProtocolError("short request header") from None
    return Request(api_key, version, correlation_id, frame[10 + max(id_size, 0) :])


def read_string(data: bytes) -> str:
    """The int16-sized string that starts ``data``."""
    (size,) = _unpack(">h", data, 0)
    if not 0 <= size <= len(data) - 2:
        raise ProtocolError("bad string")
    return data[2 : 2 + size].decode(errors="replace")


def read_bytes(data: bytes) -> bytes:
    """The int32-sized bytes that start ``data``."""
    (size,) = _unpack(">i", data, 0)
    if not 0 <= size <= len(data) - 4:
        raise ProtocolError("bad bytes")
    return data[4 : 4 + size]


def _unpack(layout: str, data: bytes, at: int) -> tuple[int, ...]:
    try:
        return struct.unpack_from(layout, data, at)
    except struct.error:
        raise ProtocolError("truncated field") from None


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    encoded = text.encode()
    return struct.pack(">h", len(encoded)) + encoded


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def response_frame(correlation_id: int, body: bytes) -> bytes:
    """Response header v0 (the correlation id alone): what all three answered requests use."""
    return struct.pack(">ii", 4 + len(body), correlation_id) + body


def api_versions_body(version: int, apis: ApiRanges) -> bytes:
    """ApiVersions response at ``version``; one above v3 gets v0 with UNSUPPORTED_VERSION, so
    the client retries lower (KIP-511)."""
    error = NO_ERROR
    if version > OWN_VERSIONS[API_VERSIONS][1]:
        version, error = 0, UNSUPPORTED_VERSION
    ranges = sorted(apis.items())
    if version >= FLEXIBLE_API_VERSIONS:
        entries = b"".join(struct.pack(">hhh", k, lo, hi) + _uvarint(0) for k, (lo, hi) in ranges)
        return (
            struct.pack(">h", error)
            + _uvarint(len(ranges) + 1)
            + entries
            + struct.pack(">i", 0)
            + _uvarint(0)
        )
    entries = b"".join(struct.pack(">hhh", k, lo, hi) for k, (lo, hi) in ranges)
    throttle = struct.pack(">i", 0) if version >= 1 else b""
    return struct.pack(">hi", error, len(ranges)) + entries + throttle


def sasl_handshake_body(error: int) -> bytes:
    mechanisms = b"".join(_string(name) for name in MECHANISMS)
    return struct.pack(">hi", error, len(MECHANISMS)) + mechanisms


def sasl_authenticate_body(version: int, error: int, message: str | None, token: bytes) -> bytes:
    """v1 adds the session lifetime: 0, no re-authentication asked for."""
    lifetime = struct.pack(">q", 0) if version >= 1 else b""
    token_field = struct.pack(">i", len(token)) + token
    return struct.pack(">h", error) + _string(message) + token_field + lifetime


@dataclass(frozen=True)
class Users:
    """The passwords (for PLAIN) and their SCRAM credentials, made once at start."""

    passwords: Mapping[str, str]
    scram: Mapping[str, Mapping[str, Credential]]

    @classmethod
    def of(cls, passwords: Mapping[str, str]) -> Users:
        scram = {
            mechanism: {user: make_credential(mechanism, pw) for user, pw in passwords.items()}
            for mechanism in HASHES
        }
        return cls(dict(passwords), scram)


class PlainLogin:
    """RFC 4616: one token, ``authzid NUL authcid NUL password``."""

    def __init__(self, users: Users) -> None:
        self.users = users
        self.mechanism = "PLAIN"
        self.username: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise LoginFailed("malformed PLAIN token")
        authzid, user, password = (part.decode(errors="replace") for part in parts)
        self.username = user
        expected = self.users.passwords.get(user)
        known = expected is not None and hmac.compare_digest(expected.encode(), password.encode())
        if not known or authzid not in ("", user):
            raise LoginFailed("invalid username or password")
        return b"", True


class ScramLogin:
    """Two tokens: client-first, then client-final (see :mod:`.scram`)."""

    def __init__(self, mechanism: str, users: Users) -> None:
        self.mechanism = mechanism
        self.server = ScramServer(mechanism, users.scram[mechanism].get)
        self.steps = 0

    @property
    def username(self) -> str | None:
        return self.server.username

    def step(self, token: bytes) -> tuple[bytes, bool]:
        self.steps += 1
        try:
            if self.steps == 1:
                return self.server.first(token), False
            return self.server.final(token), True
        except ScramError as error:
            raise LoginFailed(str(error)) from None


@dataclass
class Front:
    """What every connection shares, and the connections open now (to end them at a stop)."""

    apis: ApiRanges
    users: Users
    upstream: tuple[str, int]
    connections: dict[asyncio.StreamWriter, asyncio.Task] = field(default_factory=dict)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One client connection, already past its TLS handshake."""
        host, port = writer.get_extra_info("peername")[:2]
        peer = f"{host}:{port}"
        self.connections[writer] = asyncio.current_task()
        try:
            async with asyncio.timeout(LOGIN_TIMEOUT_S):
                logged_in = await self.login(reader, writer, peer)
            if logged_in:
                await relay(reader, writer, self.upstream)
        except (OSError, EOFError, TimeoutError, ProtocolError):
            pass
        finally:
            del self.connections[writer]
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def close_all(self) -> None:
        """Drop every connection and let its handler end by itself: Python 3.11's stream
        server logs a traceback for each handler that is cancelled instead."""
        handlers = list(self.connections.values())
        for writer in list(self.connections):
            writer.transport.abort()
        if handlers:
            await asyncio.wait(handlers, timeout=STOP_TIMEOUT_S)

    async def login(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str
    ) -> bool:
        """Answer requests until a login succeeds (True) or the connection must end (False)."""
        exchange: PlainLogin | ScramLogin | None = None
        while True:
            request = parse_request(await read_frame(reader))
            key, version = request.api_key, request.version
            if key == API_VERSIONS and exchange is None:
                await _send(writer, request, api_versions_body(version, self.apis))
            elif key == SASL_HANDSHAKE and exchange is None and version <= 1:
                if version < OWN_VERSIONS[SASL_HANDSHAKE][0]:
                    log.info("login refused: SaslHandshake v%d, peer %s", version, peer)
                    await _send(writer, request, sasl_handshake_body(UNSUPPORTED_VERSION))
                    return False
                mechanism = read_string(request.body)
                if mechanism not in MECHANISMS:
                    log.info("login refused: mechanism %s, peer %s", shown(mechanism), peer)
                    await _send(writer, request, sasl_handshake_body(UNSUPPORTED_SASL_MECHANISM))
                    return False
                exchange = _exchange(mechanism, self.users)
                await _send(writer, request, sasl_handshake_body(NO_ERROR))
            elif key == SASL_AUTHENTICATE and exchange is not None and version <= 1:
                try:
                    token, done = exchange.step(read_bytes(request.body))
                except LoginFailed as failed:
                    await _refuse(writer, request, exchange, str(failed), peer)
                    return False
                await _send(writer, request, sasl_authenticate_body(version, NO_ERROR, None, token))
                if done:
                    user, mechanism = exchange.username, exchange.mechanism
                    log.info("login: user %s, mechanism %s, peer %s", shown(user), mechanism, peer)
                    return True
            else:
                return False


def _exchange(mechanism: str, users: Users) -> PlainLogin | ScramLogin:
    return PlainLogin(users) if mechanism == "PLAIN" else ScramLogin(mechanism, users)


async def _refuse(
    writer: asyncio.StreamWriter,
    request: Request,
    exchange: PlainLogin | ScramLogin,
    reason: str,
    peer: str,
) -> None:
    """Error 58 with a message that names the user and mechanism, as Kafka's brokers do."""
    user, mechanism = shown(exchange.username), exchange.mechanism
    log.info("login failed: user %s, mechanism %s, peer %s: %s", user, mechanism, peer, reason)
    who = f" for user {user}" if exchange.username is not None else ""
    message = f"Authentication failed: {reason}{who} (mechanism {mechanism})"
    body = sasl_authenticate_body(request.version, SASL_AUTHENTICATION_FAILED, message, b"")
    await _send(writer, request, body)


async def _send(writer: asyncio.StreamWriter, request: Request, body: bytes) -> None:
    writer.write(response_frame(request.correlation_id, body))
    await writer.drain()


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    if not 0 < size <= MAX_LOGIN_FRAME:
        raise ProtocolError(f"frame of {size} bytes before the login")
    return await reader.readexactly(size)


async def relay(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    upstream: tuple[str, int],
) -> None:
    """Move bytes both ways until either side closes; ``drain`` bounds what is buffered."""
    upstream_reader, upstream_writer = await asyncio.open_connection(*upstream, limit=CHUNK)
    try:
        await until_first_ends(
            pump(client_reader, upstream_writer), pump(upstream_reader, client_writer)
        )
    finally:
        upstream_writer.close()


async def upstream_api_versions(host: str, port: int) -> ApiRanges:
    """The broker's API ranges, from an ApiVersions v0 request."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        header = struct.pack(">hhih", API_VERSIONS, 0, 1, len(CLIENT_ID)) + CLIENT_ID
        writer.write(struct.pack(">i", len(header)) + header)
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        response = await reader.readexactly(size)
    finally:
        writer.close()
    _, error, count = _unpack(">ihi", response, 0)
    if error != NO_ERROR:
        raise ProtocolError(f"the broker answered ApiVersions with error {error}")
    entries = (_unpack(">hhh", response, 10 + 6 * i) for i in range(count))
    return {key: (low, high) for key, low, high in entries}


async def serve(
    listen: tuple[str, int], upstream: tuple[str, int], tls: ssl.SSLContext, users: Users
) -> None:
    """Serve until SIGTERM or SIGINT."""
    apis = {**await upstream_api_versions(*upstream), **OWN_VERSIONS}
    front = Front(apis, users, upstream)
    server = await asyncio.start_server(
        front.handle, *listen, ssl=tls, ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S, limit=CHUNK
    )
    stopped = stop_on_signals()
    log.info(
        "listening on %s:%d for %s:%d (that port takes local connections without TLS or a login)",
        *listen,
        *upstream,
    )
    async with server:
        await stopped.wait()
        server.close()
        await front.close_all()
    log.info("stopped")


def load_users(path: Path) -> Users:
    passwords = json.loads(path.read_text())
    if not isinstance(passwords, dict) or not all(
        isinstance(user, str) and isinstance(pw, str) for user, pw in passwords.items()
    ):
        raise ValueError(f"{path} must hold a JSON object of user → password")
    return Users.of(passwords)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadgen_drivers.kafka.local.front")
    parser.add_argument("--listen", type=host_port, required=True, help="HOST:PORT for clients")
    parser.add_argument("--upstream", type=host_port, required=True, help="the broker's HOST:PORT")
    parser.add_argument("--cert", type=Path, required=True, help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, required=True, help="its private key (PEM)")
    parser.add_argument("--users", type=Path, required=True, help="JSON object user → password")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        tls = server_tls(args.cert, args.key)
        asyncio.run(serve(args.listen, args.upstream, tls, load_users(args.users)))
    except (OSError, EOFError, ProtocolError, ValueError) as error:
        log.error("kafka front stopped: %s", error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
