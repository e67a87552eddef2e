"""A Pulsar CONNECT of loadgen's own, so that a refused login is told apart from an
unreachable broker.

pulsar-client 3.x (its C++ client 4.2) closes a connection whose first reply is not CONNECTED
without reading the broker's ERROR, and retries until its operation timeout: a wrong token
looks exactly like a broker that never answers. This sends the CONNECT the client would send
(the same authentication method and data, over TLS for ``pulsar+ssl``) and reads the one reply:
an ERROR ``AuthenticationError`` (or ``AuthorizationError``) is a refused login, known at once.
Only token and basic authentication can be replayed; other plugins are left to the client.
"""

from __future__ import annotations

import socket
import ssl

from loadgen.base.protobuf_wire import LENGTH, VARINT, Field, WireError, decode, encode, first
from loadgen_drivers.pulsar.config import Authentication
from loadgen_drivers.pulsar.login import credentials

CONNECT, CONNECTED, ERROR = 2, 3, 14
"""``BaseCommand.Type`` numbers, which are also each command's field number in it."""
LOGIN_ERRORS = {3: "AuthenticationError", 4: "AuthorizationError"}
"""``ServerError`` values that mean the broker refused the credentials."""
PROTOCOL_VERSION = 21
CLIENT_VERSION = "loadgen-login-check"
MAX_REPLY = 64 * 1024
CHECK_TIMEOUT_S = 2.0


def auth_fields(auth: Authentication) -> tuple[str, bytes] | None:
    """The method name and data a Java or C++ client puts in CONNECT, for the plugins whose
    data can be replayed (token, basic); ``None`` for the others. Unreadable data is a
    ConfigError (:func:`credentials`)."""
    login = credentials(auth)
    return None if login is None else (login[0], login[1].encode())


def connect_frame(method: str, data: bytes) -> bytes:
    body = encode(
        [
            Field(1, LENGTH, CLIENT_VERSION.encode()),
            Field(3, LENGTH, data),
            Field(4, VARINT, PROTOCOL_VERSION),
            Field(5, LENGTH, method.encode()),
        ]
    )
    command = encode([Field(1, VARINT, CONNECT), Field(CONNECT, LENGTH, body)])
    return (4 + len(command)).to_bytes(4, "big") + len(command).to_bytes(4, "big") + command


def login_refusal(
    address: tuple[str, int],
    auth: Authentication,
    context: ssl.SSLContext | None,
    timeout_s: float = CHECK_TIMEOUT_S,
) -> str | None:
    """The broker's reason when it refuses the login at ``address``, else ``None`` (accepted,
    not replayable, or no clear answer: the client's own check decides then)."""
    fields = auth_fields(auth)
    if fields is None:
        return None
    host, port = address
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            stream = context.wrap_socket(raw, server_hostname=host) if context else raw
            with stream:
                stream.sendall(connect_frame(*fields))
                reply = _read_frame(stream)
    except (OSError, ValueError):  # ssl.SSLError included: the TLS check reports those
        return None
    return _refusal(reply)


def _read_frame(stream: socket.socket) -> bytes:
    head = _read_exactly(stream, 8)
    total, size = int.from_bytes(head[:4], "big"), int.from_bytes(head[4:], "big")
    if not 4 <= size + 4 <= total <= MAX_REPLY:
        raise WireError(f"a reply frame of {total} bytes")
    return _read_exactly(stream, size)


def _read_exactly(stream: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = stream.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed before a whole reply")
        data += chunk
    return data


def _refusal(command: bytes) -> str | None:
    fields = decode(command)
    if first(fields, 1) != ERROR:
        return None
    error = first(fields, ERROR)
    body = decode(error) if isinstance(error, bytes) else []
    code = first(body, 2)
    kind = LOGIN_ERRORS.get(code) if isinstance(code, int) else None
    if kind is None:
        return None
    message = first(body, 3)
    said = message.decode("utf-8", "replace") if isinstance(message, bytes) else ""
    return f"{kind}: {said}" if said else kind
