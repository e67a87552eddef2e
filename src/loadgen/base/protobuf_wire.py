"""The protobuf wire format, field by field, for the few Pulsar commands loadgen writes or reads
itself (the login check's CONNECT, the local secured front's).

The ``protobuf`` package is not a dependency and pulsar-client ships no generated classes, so
messages are read as ordered fields: a field the front does not know is kept as it
came, and a message re-encoded after one field was changed says everything else unchanged.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_FIXED_SIZE = {FIXED64: 8, FIXED32: 4}


class WireError(ValueError):
    """The bytes are not a protobuf message (truncated, or a wire type protobuf has no more)."""


@dataclass(frozen=True)
class Field:
    """One field as it was on the wire: ``value`` is the integer of a varint, else its bytes."""

    number: int
    wire_type: int
    value: int | bytes


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint starting at ``at`` and the offset after it."""
    value = shift = 0
    while at < len(data):
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            break
    raise WireError("truncated or overlong varint")


def varint(value: int) -> bytes:
    """``value`` as a varint; negative numbers as their 64-bit two's complement (as protobuf)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode(data: bytes) -> list[Field]:
    fields = []
    at = 0
    while at < len(data):
        key, at = read_varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == VARINT:
            value, at = read_varint(data, at)
            fields.append(Field(number, wire_type, value))
            continue
        if wire_type == LENGTH:
            size, at = read_varint(data, at)
        elif wire_type in _FIXED_SIZE:
            size = _FIXED_SIZE[wire_type]
        else:
            raise WireError(f"field {number} has wire type {wire_type}")
        if at + size > len(data):
            raise WireError(f"field {number} runs past the message's end")
        fields.append(Field(number, wire_type, data[at : at + size]))
        at += size
    return fields


def encode(fields: Iterable[Field]) -> bytes:
    out = bytearray()
    for field in fields:
        out += varint(field.number << 3 | field.wire_type)
        if isinstance(field.value, int):
            out += varint(field.value)
        elif field.wire_type == LENGTH:
            out += varint(len(field.value)) + field.value
        else:
            out += field.value
    return bytes(out)


def first(fields: Iterable[Field], number: int) -> int | bytes | None:
    """The first value of field ``number`` (what a proto2 optional field reads as), or None."""
    return next((field.value for field in fields if field.number == number), None)


def text(fields: Iterable[Field], number: int) -> str | None:
    value = first(fields, number)
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else None


def with_text(fields: list[Field], number: int, value: str) -> list[Field]:
    """``fields`` with string field ``number`` set to ``value`` where it was (appended if not)."""
    encoded = value.encode()
    if not any(field.number == number for field in fields):
        return [*fields, Field(number, LENGTH, encoded)]
    return [Field(number, LENGTH, encoded) if f.number == number else f for f in fields]


def message(number: int, fields: Iterable[Field]) -> Field:
    """An embedded message as field ``number``."""
    return Field(number, LENGTH, encode(fields))


def every(fields: Iterable[Field], number: int) -> list[int | bytes]:
    """Every value of field ``number`` in order (a repeated field, not packed)."""
    return [field.value for field in fields if field.number == number]


def signed(value: int | bytes | None) -> int:
    """An int64/int32 varint as the signed number it encodes (absent reads as 0, as proto3)."""
    if not isinstance(value, int):
        return 0
    return value - (1 << 64) if value >= 1 << 63 else value


def string(number: int, value: str) -> Field:
    return Field(number, LENGTH, value.encode())


def double(number: int, value: float) -> Field:
    return Field(number, FIXED64, struct.pack("<d", value))
