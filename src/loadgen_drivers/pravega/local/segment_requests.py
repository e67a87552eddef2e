"""What the local segment store answers to each request, modelled on Pravega's
``PravegaRequestProcessor`` and ``AppendProcessor``: same replies, same error replies."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable

from loadgen_drivers.pravega.local.segments import (
    BadOffset,
    NoSuchSegment,
    SegmentError,
    SegmentExists,
    Segments,
    SegmentSealed,
    StoreFull,
    TableKeyBadVersion,
    TableKeyMissing,
    TableNotEmpty,
)
from loadgen_drivers.pravega.local.wire_commands import (
    NULL_ATTRIBUTE_VALUE,
    OLDEST_COMPATIBLE_VERSION,
    WIRE_VERSION,
    Command,
    encode,
)
from loadgen_drivers.pravega.local.wire_format import WireTableKey

TAIL_WAIT_S = 2.0
"""How long a read at the tail of an open segment waits for data before an empty answer.
Pravega waits longer (up to its request timeout); a short wait keeps the reads a stopped reader
leaves behind short-lived, and stays well under the Rust client's 30-s request timeout."""
MAX_READ_SIZE = 2 * 1024 * 1024
"""The most a read returns at once, as in Pravega."""
TYPE_PLUS_LENGTH_SIZE = 8


class CloseConnection(Exception):
    """A request Pravega answers by closing the connection (the client then reconnects);
    ``reply``, when given, is sent first. ``logged``: the reason is already in the log."""

    def __init__(self, reason: str, reply: bytes = b"", *, logged: bool = False) -> None:
        super().__init__(reason)
        self.reply = reply
        self.logged = logged


class Connection:
    """Per-connection state: the writers set up on it, as ``AppendProcessor`` keeps them."""

    def __init__(self) -> None:
        self.writers: dict[int, str] = {}


Handler = Callable[[Command, Connection], Awaitable[bytes]]


def _attribute_id(writer_id: int) -> bytes:
    return writer_id.to_bytes(16, "big")


class SegmentRequests:
    """Answers one decoded request with one encoded reply."""

    def __init__(self, segments: Segments) -> None:
        self.segments = segments
        self._full_logged = False
        self._handlers: dict[str, Handler] = {
            "Hello": self._hello,
            "KeepAlive": self._keep_alive,
            "SetupAppend": self._setup_append,
            "AppendBlockEnd": self._append_block_end,
            "ConditionalBlockEnd": self._conditional_block_end,
            "ConditionalAppend": self._conditional_append,
            "ReadSegment": self._read_segment,
            "GetStreamSegmentInfo": self._get_stream_segment_info,
            "GetSegmentAttribute": self._get_segment_attribute,
            "UpdateSegmentAttribute": self._update_segment_attribute,
            "CreateSegment": self._create_segment,
            "CreateTransientSegment": self._create_transient_segment,
            "SealSegment": self._seal_segment,
            "TruncateSegment": self._truncate_segment,
            "DeleteSegment": self._delete_segment,
            "MergeSegments": self._merge_segments,
            "CreateTableSegment": self._create_table_segment,
            "DeleteTableSegment": self._delete_table_segment,
            "UpdateTableEntries": self._update_table_entries,
            "RemoveTableKeys": self._remove_table_keys,
            "ReadTable": self._read_table,
            "ReadTableKeys": self._read_table_keys,
            "ReadTableEntries": self._read_table_entries,
            "ReadTableEntriesDelta": self._read_table_entries_delta,
        }

    async def answer(self, request: Command, connection: Connection) -> bytes:
        """The reply to ``request``; raises :class:`CloseConnection` where Pravega hangs up."""
        handler = self._handlers.get(request.name)
        if handler is None:
            raise CloseConnection(f"{request.name} is not a request this store answers")
        values = request.values
        segment = values.get("segment") or values.get("segment_name") or values.get("target", "")
        try:
            return await handler(request, connection)
        except StoreFull as error:
            raise self._store_full(error) from error
        except SegmentError as error:
            return _error_reply(
                error, values.get("request_id", -1), segment, values.get("offset", -1)
            )

    def _store_full(self, error: StoreFull) -> CloseConnection:
        """A table update past the bound: Pravega has no "store full" reply, so the connection is
        closed (the client reconnects and retries until room is freed)."""
        self._log_full(error)
        return CloseConnection(str(error), logged=True)

    def _append_refused(
        self, error: StoreFull, request_id: int, name: str, event_number: int
    ) -> bytes:
        """An append past the bound is answered ``SegmentIsSealed``, the one reply on which the
        Rust writer stops instead of reconnecting and resending: it asks the controller for the
        segment's successors, gets none (streams here never scale) and ends, failing the events
        it has in flight. The segment stays open, so readers still read what it holds. The reply's
        stack trace and the log say the store is full."""
        self._log_full(error)
        return encode(
            "SegmentIsSealed",
            request_id=request_id,
            segment=name,
            server_stack_trace=f"segment store full: {error}",
            offset=event_number,
        )

    def _log_full(self, error: StoreFull) -> None:
        """The log says why once, not at every refused write."""
        if not self._full_logged:
            self._full_logged = True
            print(
                f"segment store: FULL, {error}: every append is refused from now on, answered "
                "SegmentIsSealed (the writer stops and fails the events it has in flight), "
                "until streams are deleted or truncated; --max-bytes sets the bound",
                flush=True,
            )

    # connection

    async def _hello(self, request: Command, connection: Connection) -> bytes:
        return encode("Hello", high_version=WIRE_VERSION, low_version=OLDEST_COMPATIBLE_VERSION)

    async def _keep_alive(self, request: Command, connection: Connection) -> bytes:
        return encode("KeepAlive")

    # appends

    async def _setup_append(self, request: Command, connection: Connection) -> bytes:
        name, writer_id = request["segment"], request["writer_id"]
        attributes = self.segments.get(name).attributes
        last = attributes.get(_attribute_id(writer_id), NULL_ATTRIBUTE_VALUE)
        connection.writers[writer_id] = name
        return encode(
            "AppendSetup",
            request_id=request["request_id"],
            segment=name,
            writer_id=writer_id,
            last_event_number=last,
        )

    async def _append_block_end(self, request: Command, connection: Connection) -> bytes:
        """A block of whole events: the Rust client sends no AppendBlock, so the block's whole
        events are all of its data (Pravega's AppendDecoder refuses a size beyond the data)."""
        data, size = request["data"], request["size_of_whole_events"]
        if size != len(data) or request["num_event"] <= 0:
            raise CloseConnection(
                f"AppendBlockEnd of {len(data)} bytes with size_of_whole_events {size} "
                f"and num_event {request['num_event']}"
            )
        return self._append(request, connection, request["last_event_number"], data)

    async def _conditional_block_end(self, request: Command, connection: Connection) -> bytes:
        return self._append(
            request,
            connection,
            request["event_number"],
            request["data"],
            request["expected_offset"],
        )

    async def _conditional_append(self, request: Command, connection: Connection) -> bytes:
        return self._append(
            request,
            connection,
            request["event_number"],
            request["event"],
            request["expected_offset"],
        )

    def _append(
        self,
        request: Command,
        connection: Connection,
        event_number: int,
        data: bytes,
        expected_offset: int | None = None,
    ) -> bytes:
        """Appends a writer's block of whole events. The writer's last event number is a segment
        attribute, which SetupAppend returns; a block numbered at or below it was written
        already, and Pravega answers it InvalidEventNumber and closes the connection."""
        writer_id, request_id = request["writer_id"], request["request_id"]
        name = connection.writers.get(writer_id)
        if name is None:
            raise CloseConnection(f"{request.name} from writer {writer_id:032x} before SetupAppend")
        try:
            segment = self.segments.get(name)
            attribute = _attribute_id(writer_id)
            previous = segment.attributes.get(attribute, NULL_ATTRIBUTE_VALUE)
            if event_number <= previous:
                invalid = encode(
                    "InvalidEventNumber",
                    writer_id=writer_id,
                    event_number=event_number,
                    server_stack_trace="",
                )
                raise CloseConnection(
                    f"writer {writer_id:032x} sent event {event_number}, {name} holds up to "
                    f"{previous}",
                    invalid,
                )
            if (
                expected_offset is not None
                and not segment.sealed
                and segment.length != expected_offset
            ):
                return encode(
                    "ConditionalCheckFailed",
                    writer_id=writer_id,
                    event_number=event_number,
                    request_id=request_id,
                )
            self.segments.append(name, data)
            segment.attributes[attribute] = event_number
        except StoreFull as error:
            return self._append_refused(error, request_id, name, event_number)
        except SegmentError as error:
            return _error_reply(error, request_id, name, event_number)
        return encode(
            "DataAppended",
            writer_id=writer_id,
            event_number=event_number,
            previous_event_number=previous,
            request_id=request_id,
            current_segment_write_offset=segment.length,
        )

    # reads and metadata

    async def _read_segment(self, request: Command, connection: Connection) -> bytes:
        """Data from the offset on; at the tail of an open segment, waits for some (up to
        :data:`TAIL_WAIT_S`); at the end of a sealed one, says so, as Pravega does."""
        name, offset = request["segment"], request["offset"]
        size = min(MAX_READ_SIZE, max(TYPE_PLUS_LENGTH_SIZE, request["suggested_length"]))
        deadline = asyncio.get_running_loop().time() + TAIL_WAIT_S
        while True:
            segment = self.segments.get(name)
            if offset < segment.start:
                return encode(
                    "SegmentIsTruncated",
                    request_id=request["request_id"],
                    segment=name,
                    start_offset=segment.start,
                    server_stack_trace="",
                    offset=offset,
                )
            data = self.segments.read(name, offset, size) if offset < segment.length else b""
            remaining = deadline - asyncio.get_running_loop().time()
            if data or segment.sealed or remaining <= 0:
                at_end = offset + len(data) >= segment.length
                return encode(
                    "SegmentRead",
                    segment=name,
                    offset=offset,
                    at_tail=at_end and not segment.sealed,
                    end_of_segment=at_end and segment.sealed,
                    data=data,
                    request_id=request["request_id"],
                )
            grown = segment.grown
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(grown.wait(), remaining)

    async def _get_stream_segment_info(self, request: Command, connection: Connection) -> bytes:
        name = request["segment_name"]
        segment = self.segments.get(name)
        return encode(
            "StreamSegmentInfo",
            request_id=request["request_id"],
            segment_name=name,
            exists=True,
            is_sealed=segment.sealed,
            is_deleted=False,
            last_modified=int(time.time() * 1000),
            write_offset=segment.length,
            start_offset=segment.start,
        )

    async def _get_segment_attribute(self, request: Command, connection: Connection) -> bytes:
        attributes = self.segments.get(request["segment_name"]).attributes
        value = attributes.get(_attribute_id(request["attribute_id"]), NULL_ATTRIBUTE_VALUE)
        return encode("SegmentAttribute", request_id=request["request_id"], value=value)

    async def _update_segment_attribute(self, request: Command, connection: Connection) -> bytes:
        """Compare-and-set, as Pravega's ``ReplaceIfEquals``; the null value means unset."""
        attributes = self.segments.get(request["segment_name"]).attributes
        attribute = _attribute_id(request["attribute_id"])
        success = attributes.get(attribute, NULL_ATTRIBUTE_VALUE) == request["expected_value"]
        if success:
            if request["new_value"] == NULL_ATTRIBUTE_VALUE:
                attributes.pop(attribute, None)
            else:
                attributes[attribute] = request["new_value"]
        return encode("SegmentAttributeUpdated", request_id=request["request_id"], success=success)

    # segment lifecycle

    async def _create_segment(self, request: Command, connection: Connection) -> bytes:
        self.segments.create(request["segment"])
        return _about(request, "SegmentCreated")

    async def _create_transient_segment(self, request: Command, connection: Connection) -> bytes:
        """A large event's staging segment, named as Pravega's ``NameUtils`` names them."""
        name = f"{request['segment']}#transient.{request['writer_id']:032x}.{uuid.uuid4().hex}"
        self.segments.create(name)
        return encode("SegmentCreated", request_id=request["request_id"], segment=name)

    async def _seal_segment(self, request: Command, connection: Connection) -> bytes:
        name = request["segment"]
        if self.segments.get(name).sealed:
            raise SegmentSealed(name)
        self.segments.seal(name)
        return encode("SegmentSealed", request_id=request["request_id"], segment=name)

    async def _truncate_segment(self, request: Command, connection: Connection) -> bytes:
        name = request["segment"]
        self.segments.truncate(name, request["truncation_offset"])
        return encode("SegmentTruncated", request_id=request["request_id"], segment=name)

    async def _delete_segment(self, request: Command, connection: Connection) -> bytes:
        self.segments.delete(request["segment"])
        return _about(request, "SegmentDeleted")

    async def _merge_segments(self, request: Command, connection: Connection) -> bytes:
        target, source = request["target"], request["source"]
        try:
            self.segments.get(source)
        except NoSuchSegment as error:
            return _error_reply(error, request["request_id"], source, -1)
        length = self.segments.merge(target, source)
        return encode(
            "SegmentsMerged",
            request_id=request["request_id"],
            target=target,
            source=source,
            new_target_write_offset=length,
        )

    # table segments

    async def _create_table_segment(self, request: Command, connection: Connection) -> bytes:
        self.segments.create(request["segment"], table=True)
        return _about(request, "SegmentCreated")

    async def _delete_table_segment(self, request: Command, connection: Connection) -> bytes:
        self.segments.delete_table(request["segment"], request["must_be_empty"])
        return _about(request, "SegmentDeleted")

    async def _update_table_entries(self, request: Command, connection: Connection) -> bytes:
        entries = [(key.data, value, key.version) for key, value in request["table_entries"]]
        versions = self.segments.update_table(
            request["segment"], entries, request["table_segment_offset"]
        )
        return encode(
            "TableEntriesUpdated", request_id=request["request_id"], updated_versions=versions
        )

    async def _remove_table_keys(self, request: Command, connection: Connection) -> bytes:
        keys = [(key.data, key.version) for key in request["keys"]]
        self.segments.remove_table_keys(request["segment"], keys, request["table_segment_offset"])
        return _about(request, "TableKeysRemoved")

    async def _read_table(self, request: Command, connection: Connection) -> bytes:
        """One entry per key asked, a missing key as version -1 with an empty value (Pravega's
        ``TableKey.NOT_EXISTS``)."""
        table = self.segments.table(request["segment"])
        entries = []
        for key in request["keys"]:
            entry = table.get(key.data)
            if entry is None:
                entries.append((WireTableKey(key.data, -1), b""))
            else:
                entries.append((WireTableKey(key.data, entry.version), entry.value))
        return encode(
            "TableRead",
            request_id=request["request_id"],
            segment=request["segment"],
            entries=entries,
        )

    async def _read_table_keys(self, request: Command, connection: Connection) -> bytes:
        page, token = self._table_page(request, request["suggested_key_count"])
        return encode(
            "TableKeysRead",
            request_id=request["request_id"],
            segment=request["segment"],
            keys=[key for key, _ in page],
            continuation_token=token,
        )

    async def _read_table_entries(self, request: Command, connection: Connection) -> bytes:
        page, token = self._table_page(request, request["suggested_entry_count"])
        return encode(
            "TableEntriesRead",
            request_id=request["request_id"],
            segment=request["segment"],
            entries=page,
            continuation_token=token,
        )

    def _table_page(
        self, request: Command, count: int
    ) -> tuple[list[tuple[WireTableKey, bytes]], bytes]:
        """Entries in key order after the continuation token, which is the last key returned
        (opaque to the client, as Pravega's is); an empty token starts from the first key."""
        table = self.segments.table(request["segment"])
        after = request["continuation_token"]
        keys = sorted(key for key in table if not after or key > after)[: max(count, 1)]
        page = [(WireTableKey(key, table[key].version), table[key].value) for key in keys]
        return page, keys[-1] if keys else after

    async def _read_table_entries_delta(self, request: Command, connection: Connection) -> bytes:
        changes, position, reached_end = self.segments.table_changes(
            request["segment"], request["from_position"], request["suggested_entry_count"]
        )
        return encode(
            "TableEntriesDeltaRead",
            request_id=request["request_id"],
            segment=request["segment"],
            entries=[(WireTableKey(key, entry.version), entry.value) for key, entry in changes],
            should_clear=False,
            reached_end=reached_end,
            last_position=position,
        )


def _about(request: Command, kind: str) -> bytes:
    """A reply of ``kind`` naming just the request and its segment."""
    return encode(kind, request_id=request["request_id"], segment=request["segment"])


def _error_reply(error: SegmentError, request_id: int, segment: str, offset: int) -> bytes:
    """The reply Pravega sends for ``error`` (``PravegaRequestProcessor.handleException``)."""
    common = {"request_id": request_id, "segment": segment, "server_stack_trace": ""}
    if isinstance(error, NoSuchSegment):
        return encode("NoSuchSegment", offset=offset, **common)
    if isinstance(error, SegmentSealed):
        return encode("SegmentIsSealed", offset=offset, **common)
    if isinstance(error, SegmentExists):
        return encode("SegmentAlreadyExists", **common)
    if isinstance(error, TableKeyMissing):
        return encode("TableKeyDoesNotExist", **common)
    if isinstance(error, TableKeyBadVersion):
        return encode("TableKeyBadVersion", **common)
    if isinstance(error, TableNotEmpty):
        return encode("TableSegmentNotEmpty", **common)
    if isinstance(error, BadOffset):
        return encode(
            "SegmentIsTruncated", start_offset=error.expected, offset=error.given, **common
        )
    raise CloseConnection(f"{segment}: {error}") from error
