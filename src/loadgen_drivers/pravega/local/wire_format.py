"""Pravega's wire encoding: the field types of its segment-store commands and their framing.

Every command travels as ``type code (i32) | payload length (i32) | payload``, big-endian, the
length counting the payload only. Payloads are the fields in order as the Rust client's bincode2
writes them (and Java's ``DataOutput`` reads them): integers big-endian, bool and u8 one byte,
128-bit ids as 16 bytes, strings with a u16 byte length (Java's ``writeUTF``), byte arrays and
lists with a u32 count. Decoding ignores trailing bytes, as Java does, so a newer peer's extra
fields are harmless.
"""

from __future__ import annotations

import asyncio
import struct
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

HEADER = struct.Struct(">ii")
EVENT_TYPE_CODE = 0
"""The wire type of an event inside a segment (``WireCommandType.EVENT``)."""
MAX_PAYLOAD = 0x00FF_FFFF
"""The largest payload either side accepts (16 MiB - 1), as Pravega's ``MAX_WIRECOMMAND_SIZE``."""


class WireTableKey(NamedTuple):
    data: bytes
    version: int


class Field(ABC):
    """One field type: how it is written and read."""

    @abstractmethod
    def encode(self, out: bytearray, value: Any) -> None: ...

    @abstractmethod
    def decode(self, buf: bytes, at: int) -> tuple[Any, int]:
        """The value at ``at`` and the offset after it."""


class _Fixed(Field):
    def __init__(self, fmt: str) -> None:
        self._struct = struct.Struct(fmt)

    def encode(self, out: bytearray, value: Any) -> None:
        out += self._struct.pack(value)

    def decode(self, buf: bytes, at: int) -> tuple[Any, int]:
        (value,) = self._struct.unpack_from(buf, at)
        return value, at + self._struct.size


class _U128(Field):
    def encode(self, out: bytearray, value: int) -> None:
        out += value.to_bytes(16, "big")

    def decode(self, buf: bytes, at: int) -> tuple[int, int]:
        if at + 16 > len(buf):
            raise ValueError("truncated u128")
        return int.from_bytes(buf[at : at + 16], "big"), at + 16


class _Blob(Field):
    """Bytes behind a length prefix of ``fmt``."""

    def __init__(self, fmt: str) -> None:
        self._length = struct.Struct(fmt)

    def encode(self, out: bytearray, value: bytes) -> None:
        out += self._length.pack(len(value))
        out += value

    def decode(self, buf: bytes, at: int) -> tuple[bytes, int]:
        (length,) = self._length.unpack_from(buf, at)
        start = at + self._length.size
        if start + length > len(buf):
            raise ValueError("truncated byte array")
        return bytes(buf[start : start + length]), start + length


class _String(Field):
    _bytes = _Blob(">H")

    def encode(self, out: bytearray, value: str) -> None:
        self._bytes.encode(out, value.encode())

    def decode(self, buf: bytes, at: int) -> tuple[str, int]:
        raw, at = self._bytes.decode(buf, at)
        return raw.decode(), at


class _List(Field):
    def __init__(self, item: Field) -> None:
        self._item = item

    def encode(self, out: bytearray, value: list[Any]) -> None:
        out += struct.pack(">I", len(value))
        for item in value:
            self._item.encode(out, item)

    def decode(self, buf: bytes, at: int) -> tuple[list[Any], int]:
        (count,) = struct.unpack_from(">I", buf, at)
        at += 4
        items = []
        for _ in range(count):
            item, at = self._item.decode(buf, at)
            items.append(item)
        return items, at


I32 = _Fixed(">i")
I64 = _Fixed(">q")
U8 = _Fixed(">B")
BOOL = _Fixed(">?")
U128 = _U128()
STRING = _String()
BYTES = _Blob(">I")


class _TableKey(Field):
    """``payload (i32) | key bytes | version (i64)``; payload is the size a Java peer skips by."""

    def encode(self, out: bytearray, value: WireTableKey) -> None:
        I32.encode(out, 4 + len(value.data) + 8)
        BYTES.encode(out, value.data)
        I64.encode(out, value.version)

    def decode(self, buf: bytes, at: int) -> tuple[WireTableKey, int]:
        _, at = I32.decode(buf, at)
        data, at = BYTES.decode(buf, at)
        version, at = I64.decode(buf, at)
        return WireTableKey(data, version), at


class _TableValue(Field):
    def encode(self, out: bytearray, value: bytes) -> None:
        I32.encode(out, 4 + len(value))
        BYTES.encode(out, value)

    def decode(self, buf: bytes, at: int) -> tuple[bytes, int]:
        _, at = I32.decode(buf, at)
        return BYTES.decode(buf, at)


class _TableEntry(Field):
    _key = _TableKey()
    _value = _TableValue()

    def encode(self, out: bytearray, value: tuple[WireTableKey, bytes]) -> None:
        self._key.encode(out, value[0])
        self._value.encode(out, value[1])

    def decode(self, buf: bytes, at: int) -> tuple[tuple[WireTableKey, bytes], int]:
        key, at = self._key.decode(buf, at)
        value, at = self._value.decode(buf, at)
        return (key, value), at


class _Event(Field):
    """An event as it lies in a segment: ``0 (i32) | length (u32) | data``, kept whole. Another
    type code is refused, as Pravega's ``Event.readFrom`` refuses it."""

    def encode(self, out: bytearray, value: bytes) -> None:
        out += value

    def decode(self, buf: bytes, at: int) -> tuple[bytes, int]:
        (code,) = struct.unpack_from(">i", buf, at)
        if code != EVENT_TYPE_CODE:
            raise ValueError(f"an event of type {code}, not {EVENT_TYPE_CODE} (Event)")
        _, end = BYTES.decode(buf, at + 4)
        return bytes(buf[at:end]), end


I64S = _List(I64)
STRINGS = _List(STRING)
TABLE_KEYS = _List(_TableKey())
TABLE_ENTRIES = _List(_TableEntry())
EVENT = _Event()


def frame(code: int, payload: bytes) -> bytes:
    return HEADER.pack(code, len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """The next command's type code and payload; raises ``asyncio.IncompleteReadError`` at EOF."""
    code, length = HEADER.unpack(await reader.readexactly(HEADER.size))
    if not 0 <= length <= MAX_PAYLOAD:
        raise ValueError(f"command {code}: payload length {length} out of range")
    return code, await reader.readexactly(length)
