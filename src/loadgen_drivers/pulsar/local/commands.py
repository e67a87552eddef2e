"""The few Pulsar binary-protocol commands the secured front reads or writes, in their frames.

A frame is a 4-byte total size, a 4-byte command size, the protobuf ``BaseCommand`` and, for
SEND and MESSAGE, the rest (magic, checksum, metadata, payload), which the front never opens.
Field numbers are PulsarApi.proto's; in ``BaseCommand`` each command's field number is its
``Type`` number.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from loadgen.base.protobuf_wire import (
    LENGTH,
    VARINT,
    Field,
    decode,
    encode,
    first,
    message,
    text,
    with_text,
)

CONNECT = 2
ERROR = 14
LOOKUP_RESPONSE = 24
TYPE_FIELD = 1

AUTHENTICATION_ERROR = 3
"""``ServerError.AuthenticationError``."""
NO_REQUEST = -1
"""The request id a broker's ERROR on CONNECT carries (the CONNECT has none)."""

CONNECT_AUTH_FIELDS = {2, 3, 5}
"""``CommandConnect``'s ``auth_method`` (deprecated), ``auth_data``, ``auth_method_name``."""
LOOKUP_URL_FIELDS = (1, 2)
"""``CommandLookupTopicResponse``'s ``brokerServiceUrl`` and ``brokerServiceUrlTls``."""

MAX_CONNECT_FRAME = 64 * 1024
"""A CONNECT is a few hundred bytes (a token included): more, before authentication, is refused
rather than buffered."""


class FrameError(ValueError):
    """Not a Pulsar frame, or not the command expected."""


@dataclass(frozen=True)
class Frame:
    """A whole frame as it came (``raw``, size prefix included) and its decoded command."""

    raw: bytes
    command: list[Field]

    @property
    def type(self) -> int:
        value = first(self.command, TYPE_FIELD)
        return value if isinstance(value, int) else 0

    def body(self, number: int) -> list[Field]:
        """The command's embedded message ``number`` (its fields; empty when absent)."""
        value = first(self.command, number)
        return decode(value) if isinstance(value, bytes) else []


async def read_frame(reader: asyncio.StreamReader, limit: int | None = None) -> bytes:
    """The next whole frame's bytes; ``limit`` bounds its size (FrameError above it)."""
    head = await reader.readexactly(4)
    size = int.from_bytes(head, "big")
    if size < 4 or (limit is not None and size > limit):
        raise FrameError(f"a frame of {size} bytes")
    return head + await reader.readexactly(size)


_TYPE_TAG = bytes([TYPE_FIELD << 3 | VARINT])
_LOOKUP_RESPONSE_START = _TYPE_TAG + bytes([LOOKUP_RESPONSE])
"""How a LOOKUP_RESPONSE's command starts: 24 is a one-byte varint."""


def may_be_lookup_response(raw: bytes) -> bool:
    """Whether a frame has to be decoded to tell: not when its command starts with another
    ``type``, as encoders write it, so MESSAGE frames pass without a protobuf decode."""
    return raw[8:9] != _TYPE_TAG or raw[8:10] == _LOOKUP_RESPONSE_START


def parse(raw: bytes) -> Frame:
    command_size = int.from_bytes(raw[4:8], "big")
    if 8 + command_size > len(raw):
        raise FrameError(f"a command of {command_size} bytes in a frame of {len(raw)}")
    return Frame(raw, decode(raw[8 : 8 + command_size]))


def build(command: list[Field]) -> bytes:
    """A frame of ``command`` alone: none the front writes carries a payload."""
    encoded = encode(command)
    return (4 + len(encoded)).to_bytes(4, "big") + len(encoded).to_bytes(4, "big") + encoded


@dataclass(frozen=True)
class ConnectAuth:
    method: str | None
    data: bytes | None


def connect_auth(frame: Frame) -> ConnectAuth:
    if frame.type != CONNECT:
        raise FrameError(f"the first command is type {frame.type}, not CONNECT")
    body = frame.body(CONNECT)
    data = first(body, 3)
    return ConnectAuth(text(body, 5), data if isinstance(data, bytes) else None)


def without_auth(frame: Frame) -> bytes:
    """The CONNECT with no credentials: the front checked them; the broker behind needs none."""
    body = [field for field in frame.body(CONNECT) if field.number not in CONNECT_AUTH_FIELDS]
    return build(_replaced(frame.command, CONNECT, body))


def auth_error(reason: str) -> bytes:
    """The ERROR a Pulsar broker answers a CONNECT it could not authenticate with."""
    error = [
        Field(1, VARINT, NO_REQUEST),
        Field(2, VARINT, AUTHENTICATION_ERROR),
        Field(3, LENGTH, reason.encode()),
    ]
    return build([Field(TYPE_FIELD, VARINT, ERROR), message(ERROR, error)])


def with_broker_url(frame: Frame, url: str) -> bytes:
    """A LOOKUP_RESPONSE naming ``url`` for both broker URLs it names (the raw frame when it
    names none: a failed lookup), so the client connects where ``url`` says."""
    body = frame.body(LOOKUP_RESPONSE)
    if not any(field.number in LOOKUP_URL_FIELDS for field in body):
        return frame.raw
    for number in LOOKUP_URL_FIELDS:
        body = with_text(body, number, url)
    return build(_replaced(frame.command, LOOKUP_RESPONSE, body))


def _replaced(command: list[Field], number: int, body: list[Field]) -> list[Field]:
    return [message(number, body) if f.number == number else f for f in command]
