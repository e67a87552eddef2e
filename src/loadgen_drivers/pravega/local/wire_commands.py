"""The segment-store commands of Pravega's wire protocol (version 15) that the local store speaks.

Type codes and field orders are Pravega's (``WireCommands.java``, the Rust client's
``wire_protocol/src/commands.rs``). Both directions share one table so tests can play the client.
Left out: commands only the Java client sends (``AppendBlock``, ``PartialEvent``, ``Padding``;
the Rust client sends whole events in ``AppendBlockEnd``), admin ones (storage flush/chunks) and
``WrongHost``/auth replies (one store, no auth).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from loadgen_drivers.pravega.local.wire_format import (
    BOOL,
    BYTES,
    EVENT,
    I32,
    I64,
    I64S,
    STRING,
    TABLE_ENTRIES,
    TABLE_KEYS,
    U8,
    U128,
    Field,
    frame,
)

WIRE_VERSION = 15
OLDEST_COMPATIBLE_VERSION = 5
NULL_ATTRIBUTE_VALUE = -(2**63)
"""An attribute that was never set, e.g. a new writer's last event number."""


@dataclass(frozen=True)
class CommandType:
    name: str
    code: int
    fields: tuple[tuple[str, Field], ...]


@dataclass(frozen=True)
class Command:
    type: CommandType
    values: dict[str, Any]

    @property
    def name(self) -> str:
        return self.type.name

    def __getitem__(self, field: str) -> Any:
        return self.values[field]


def _t(name: str, code: int, *fields: tuple[str, Field]) -> CommandType:
    return CommandType(name, code, fields)


_ID = ("request_id", I64)
_SEGMENT = ("segment", STRING)
_TOKEN = ("delegation_token", STRING)
_TRACE = ("server_stack_trace", STRING)
_WRITER = ("writer_id", U128)

TYPES = (
    _t("Hello", -127, ("high_version", I32), ("low_version", I32)),
    _t("KeepAlive", 100),
    # errors
    _t("SegmentIsSealed", 51, _ID, _SEGMENT, _TRACE, ("offset", I64)),
    _t("SegmentAlreadyExists", 52, _ID, _SEGMENT, _TRACE),
    _t("NoSuchSegment", 53, _ID, _SEGMENT, _TRACE, ("offset", I64)),
    _t("InvalidEventNumber", 55, _WRITER, ("event_number", I64), _TRACE),
    _t("SegmentIsTruncated", 56, _ID, _SEGMENT, ("start_offset", I64), _TRACE, ("offset", I64)),
    _t("OperationUnsupported", 57, _ID, ("operation_name", STRING), _TRACE),
    _t("TableSegmentNotEmpty", 80, _ID, _SEGMENT, _TRACE),
    _t("TableKeyDoesNotExist", 81, _ID, _SEGMENT, _TRACE),
    _t("TableKeyBadVersion", 82, _ID, _SEGMENT, _TRACE),
    # appends
    _t("SetupAppend", 1, _ID, _WRITER, _SEGMENT, _TOKEN),
    _t("AppendSetup", 2, _ID, _SEGMENT, _WRITER, ("last_event_number", I64)),
    _t(
        "AppendBlockEnd",
        4,
        _WRITER,
        ("size_of_whole_events", I32),
        ("data", BYTES),
        ("num_event", I32),
        ("last_event_number", I64),
        _ID,
    ),
    _t(
        "ConditionalAppend",
        5,
        _WRITER,
        ("event_number", I64),
        ("expected_offset", I64),
        ("event", EVENT),
        _ID,
    ),
    _t(
        "DataAppended",
        7,
        _WRITER,
        ("event_number", I64),
        ("previous_event_number", I64),
        _ID,
        ("current_segment_write_offset", I64),
    ),
    _t("ConditionalCheckFailed", 8, _WRITER, ("event_number", I64), _ID),
    _t(
        "ConditionalBlockEnd",
        89,
        _WRITER,
        ("event_number", I64),
        ("expected_offset", I64),
        ("data", BYTES),
        _ID,
    ),
    # reads and segment metadata
    _t(
        "ReadSegment",
        9,
        _SEGMENT,
        ("offset", I64),
        ("suggested_length", I32),
        _TOKEN,
        _ID,
    ),
    _t(
        "SegmentRead",
        10,
        _SEGMENT,
        ("offset", I64),
        ("at_tail", BOOL),
        ("end_of_segment", BOOL),
        ("data", BYTES),
        _ID,
    ),
    _t("GetStreamSegmentInfo", 11, _ID, ("segment_name", STRING), _TOKEN),
    _t(
        "StreamSegmentInfo",
        12,
        _ID,
        ("segment_name", STRING),
        ("exists", BOOL),
        ("is_sealed", BOOL),
        ("is_deleted", BOOL),
        ("last_modified", I64),
        ("write_offset", I64),
        ("start_offset", I64),
    ),
    _t(
        "GetSegmentAttribute",
        34,
        _ID,
        ("segment_name", STRING),
        ("attribute_id", U128),
        _TOKEN,
    ),
    _t("SegmentAttribute", 35, _ID, ("value", I64)),
    _t(
        "UpdateSegmentAttribute",
        36,
        _ID,
        ("segment_name", STRING),
        ("attribute_id", U128),
        ("new_value", I64),
        ("expected_value", I64),
        _TOKEN,
    ),
    _t("SegmentAttributeUpdated", 37, _ID, ("success", BOOL)),
    # segment lifecycle
    _t(
        "CreateSegment",
        20,
        _ID,
        _SEGMENT,
        ("target_rate", I32),
        ("scale_type", U8),
        _TOKEN,
    ),
    _t("SegmentCreated", 21, _ID, _SEGMENT),
    _t("SealSegment", 28, _ID, _SEGMENT, _TOKEN),
    _t("SegmentSealed", 29, _ID, _SEGMENT),
    _t("DeleteSegment", 30, _ID, _SEGMENT, _TOKEN),
    _t("SegmentDeleted", 31, _ID, _SEGMENT),
    _t("TruncateSegment", 38, _ID, _SEGMENT, ("truncation_offset", I64), _TOKEN),
    _t("SegmentTruncated", 39, _ID, _SEGMENT),
    _t("CreateTransientSegment", 40, _ID, _WRITER, _SEGMENT, _TOKEN),
    _t("MergeSegments", 58, _ID, ("target", STRING), ("source", STRING), _TOKEN),
    _t(
        "SegmentsMerged",
        59,
        _ID,
        ("target", STRING),
        ("source", STRING),
        ("new_target_write_offset", I64),
    ),
    # table segments
    _t("CreateTableSegment", 70, _ID, _SEGMENT, _TOKEN),
    _t("DeleteTableSegment", 71, _ID, _SEGMENT, ("must_be_empty", BOOL), _TOKEN),
    _t(
        "UpdateTableEntries",
        74,
        _ID,
        _SEGMENT,
        _TOKEN,
        ("table_entries", TABLE_ENTRIES),
        ("table_segment_offset", I64),
    ),
    _t("TableEntriesUpdated", 75, _ID, ("updated_versions", I64S)),
    _t(
        "RemoveTableKeys",
        76,
        _ID,
        _SEGMENT,
        _TOKEN,
        ("keys", TABLE_KEYS),
        ("table_segment_offset", I64),
    ),
    _t("TableKeysRemoved", 77, _ID, _SEGMENT),
    _t("ReadTable", 78, _ID, _SEGMENT, _TOKEN, ("keys", TABLE_KEYS)),
    _t("TableRead", 79, _ID, _SEGMENT, ("entries", TABLE_ENTRIES)),
    _t(
        "ReadTableKeys",
        83,
        _ID,
        _SEGMENT,
        _TOKEN,
        ("suggested_key_count", I32),
        ("continuation_token", BYTES),
    ),
    _t(
        "TableKeysRead",
        84,
        _ID,
        _SEGMENT,
        ("keys", TABLE_KEYS),
        ("continuation_token", BYTES),
    ),
    _t(
        "ReadTableEntries",
        85,
        _ID,
        _SEGMENT,
        _TOKEN,
        ("suggested_entry_count", I32),
        ("continuation_token", BYTES),
    ),
    _t(
        "TableEntriesRead",
        86,
        _ID,
        _SEGMENT,
        ("entries", TABLE_ENTRIES),
        ("continuation_token", BYTES),
    ),
    _t(
        "TableEntriesDeltaRead",
        87,
        _ID,
        _SEGMENT,
        ("entries", TABLE_ENTRIES),
        ("should_clear", BOOL),
        ("reached_end", BOOL),
        ("last_position", I64),
    ),
    _t(
        "ReadTableEntriesDelta",
        88,
        _ID,
        _SEGMENT,
        _TOKEN,
        ("from_position", I64),
        ("suggested_entry_count", I32),
    ),
)

BY_CODE = {t.code: t for t in TYPES}
BY_NAME = {t.name: t for t in TYPES}


class UnknownCommand(ValueError):
    """A type code this store does not speak; the connection is closed, as Pravega does."""


def encode(name: str, **values: Any) -> bytes:
    """The framed command ``name`` with ``values`` for all of its fields."""
    kind = BY_NAME[name]
    out = bytearray()
    for field, codec in kind.fields:
        codec.encode(out, values[field])
    return frame(kind.code, bytes(out))


def decode(code: int, payload: bytes) -> Command:
    kind = BY_CODE.get(code)
    if kind is None:
        raise UnknownCommand(f"unknown wire command type {code}")
    values: dict[str, Any] = {}
    at = 0
    try:
        for field, codec in kind.fields:
            values[field], at = codec.decode(payload, at)
    except (struct.error, ValueError) as error:
        raise ValueError(f"{kind.name}: malformed payload ({error})") from error
    return Command(kind, values)
