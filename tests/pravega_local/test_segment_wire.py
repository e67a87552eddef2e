"""The local segment store at the wire, for what the real client cannot be made to show: a
writer's stale resend, a full store, Pravega's error replies, conditional table updates, and the
commands the client sends only on paths a test cannot reach (large events, attributes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from loadgen_drivers.pravega.local.segment_store import serve_segment_store
from loadgen_drivers.pravega.local.segments import KEY_NO_VERSION, KEY_NOT_EXISTS, Segments
from loadgen_drivers.pravega.local.wire_commands import (
    NULL_ATTRIBUTE_VALUE,
    Command,
    decode,
    encode,
)
from loadgen_drivers.pravega.local.wire_format import WireTableKey, read_frame

pytestmark = pytest.mark.timeout(60)

SEGMENT = "scope/stream/0.#epoch.0"


def event(data: bytes) -> bytes:
    return (0).to_bytes(4, "big") + len(data).to_bytes(4, "big") + data


class Peer:
    """One client connection, request by request."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def call(self, name: str, **values: Any) -> Command:
        self.writer.write(encode(name, **values))
        await self.writer.drain()
        return decode(*await asyncio.wait_for(read_frame(self.reader), 10))

    async def closed(self) -> bytes:
        """What the store sent before it closed the connection."""
        return await asyncio.wait_for(self.reader.read(), 5)


@asynccontextmanager
async def store(
    max_bytes: int | None = None,
) -> AsyncIterator[tuple[Segments, Callable[[], Awaitable[Peer]], Any]]:
    segments = Segments() if max_bytes is None else Segments(max_bytes)
    server = await serve_segment_store(segments, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    peers: list[Peer] = []

    async def connect() -> Peer:
        peer = Peer(*await asyncio.open_connection("127.0.0.1", port))
        peers.append(peer)
        return peer

    try:
        yield segments, connect, server
    finally:
        for peer in peers:
            peer.writer.close()
        server.close()
        await server.wait_closed()


def run(scenario: Callable[..., Awaitable[None]], max_bytes: int | None = None) -> None:
    async def main() -> None:
        async with store(max_bytes) as (segments, connect, server):
            await scenario(segments, connect, server)

    asyncio.run(asyncio.wait_for(main(), 30))


def test_hello_and_keep_alive_are_answered_in_kind():
    async def scenario(segments, connect, server) -> None:
        peer = await connect()
        hello = await peer.call("Hello", high_version=15, low_version=5)
        assert (hello.name, hello["high_version"], hello["low_version"]) == ("Hello", 15, 5)
        assert (await peer.call("KeepAlive")).name == "KeepAlive"
        assert server.served == {"Hello": 1, "KeepAlive": 1}

    run(scenario)


def test_a_resent_block_is_answered_invalid_event_number_and_not_written_twice():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        first = await connect()
        setup = await first.call(
            "SetupAppend", request_id=1, writer_id=9, segment=SEGMENT, delegation_token=""
        )
        assert setup["last_event_number"] == NULL_ATTRIBUTE_VALUE
        block = event(b"one") + event(b"two")
        append = {"writer_id": 9, "size_of_whole_events": len(block), "num_event": 2}
        done = await first.call(
            "AppendBlockEnd", data=block, last_event_number=2, request_id=2, **append
        )
        assert (done.name, done["event_number"], done["current_segment_write_offset"]) == (
            "DataAppended",
            2,
            len(block),
        )
        again = await connect()
        setup = await again.call(
            "SetupAppend", request_id=3, writer_id=9, segment=SEGMENT, delegation_token=""
        )
        assert setup["last_event_number"] == 2
        again.writer.write(
            encode("AppendBlockEnd", data=block, last_event_number=2, request_id=4, **append)
        )
        answer = await again.closed()
        assert decode(*frame_of(answer)).values == {
            "writer_id": 9,
            "event_number": 2,
            "server_stack_trace": "",
        }
        assert bytes(segments.get(SEGMENT).data) == block

    run(scenario)


def frame_of(data: bytes) -> tuple[int, bytes]:
    """The one frame ``data`` holds, as (type code, payload)."""
    code, length = int.from_bytes(data[:4], "big"), int.from_bytes(data[4:8], "big")
    assert len(data) == 8 + length
    return code, data[8:]


def test_a_block_whose_sizes_do_not_match_its_data_closes_the_connection():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        for sizes in ({"size_of_whole_events": 5, "num_event": 1}, {
            "size_of_whole_events": 11, "num_event": 0,
        }):  # fmt: skip
            peer = await connect()
            await peer.call(
                "SetupAppend", request_id=1, writer_id=2, segment=SEGMENT, delegation_token=""
            )
            peer.writer.write(
                encode(
                    "AppendBlockEnd",
                    writer_id=2,
                    data=event(b"new"),
                    last_event_number=1,
                    request_id=2,
                    **sizes,
                )
            )
            assert await peer.closed() == b""
        assert segments.get(SEGMENT).length == 0

    run(scenario)


def test_a_full_store_answers_each_append_sealed_and_says_so_once(capsys):
    """Sealed is the reply on which the Rust writer stops instead of reconnecting; the segment
    stays open for its readers, and the connection for the next request."""

    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        for request_id in (1, 2):
            peer = await connect()
            await peer.call(
                "SetupAppend",
                request_id=request_id,
                writer_id=4,
                segment=SEGMENT,
                delegation_token="",
            )
            block = event(b"x" * 20)
            refused = await peer.call(
                "AppendBlockEnd",
                writer_id=4,
                size_of_whole_events=len(block),
                data=block,
                num_event=1,
                last_event_number=1,
                request_id=request_id + 10,
            )
            assert refused.name == "SegmentIsSealed"
            assert (refused["request_id"], refused["segment"]) == (request_id + 10, SEGMENT)
            assert "segment store full" in refused["server_stack_trace"]
            assert (await peer.call("KeepAlive")).name == "KeepAlive"
        assert (segments.get(SEGMENT).length, segments.get(SEGMENT).sealed) == (0, False)

    run(scenario, max_bytes=16)
    log = capsys.readouterr().out
    assert log.count("segment store: FULL") == 1
    assert "closing a connection" not in log


def test_reads_report_truncation_the_sealed_end_and_missing_segments():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        segments.append(SEGMENT, event(b"abc") + event(b"de"))
        segments.truncate(SEGMENT, 11)
        segments.seal(SEGMENT)
        peer = await connect()

        async def read(offset: int, segment: str = SEGMENT) -> Command:
            return await peer.call(
                "ReadSegment",
                segment=segment,
                offset=offset,
                suggested_length=1024,
                delegation_token="",
                request_id=offset,
            )

        truncated = await read(0)
        assert (truncated.name, truncated["start_offset"]) == ("SegmentIsTruncated", 11)
        tail = await read(11)
        assert (tail["data"], tail["end_of_segment"], tail["at_tail"]) == (
            event(b"de"),
            True,
            False,
        )
        end = await read(21)
        assert (end.name, end["data"], end["end_of_segment"]) == ("SegmentRead", b"", True)
        missing = await read(0, "scope/stream/9.#epoch.0")
        assert missing.name == "NoSuchSegment"

    run(scenario)


def test_an_idle_tail_read_answers_empty_after_its_wait(monkeypatch):
    monkeypatch.setattr("loadgen_drivers.pravega.local.segment_requests.TAIL_WAIT_S", 0.2)

    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        peer = await connect()
        reply = await peer.call(
            "ReadSegment",
            segment=SEGMENT,
            offset=0,
            suggested_length=1024,
            delegation_token="",
            request_id=1,
        )
        assert (reply["data"], reply["at_tail"], reply["end_of_segment"]) == (b"", True, False)

    run(scenario)


def test_a_read_waiting_at_the_tail_does_not_hold_up_later_requests_on_its_connection():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        peer = await connect()
        tail_read = encode(
            "ReadSegment",
            segment=SEGMENT,
            offset=0,
            suggested_length=1024,
            delegation_token="",
            request_id=1,
        )
        peer.writer.write(tail_read)
        keep_alive = await peer.call("KeepAlive")  # answered while the read waits for data
        assert keep_alive.name == "KeepAlive"
        segments.append(SEGMENT, event(b"late"))
        read = decode(*await asyncio.wait_for(read_frame(peer.reader), 10))
        assert (read.name, read["request_id"], read["data"]) == ("SegmentRead", 1, event(b"late"))

    run(scenario)


def test_segment_lifecycle_and_its_errors():
    async def scenario(segments, connect, server) -> None:
        peer = await connect()
        create = {"target_rate": 0, "scale_type": 0, "delegation_token": ""}
        created = await peer.call("CreateSegment", request_id=1, segment=SEGMENT, **create)
        assert created.name == "SegmentCreated"
        again = await peer.call("CreateSegment", request_id=2, segment=SEGMENT, **create)
        assert again.name == "SegmentAlreadyExists"
        source = SEGMENT + "#transaction.00000000000000000000000000000001"
        segments.create(source)
        segments.append(source, event(b"txn"))
        merged = await peer.call(
            "MergeSegments", request_id=3, target=SEGMENT, source=source, delegation_token=""
        )
        assert (merged.name, merged["new_target_write_offset"]) == ("SegmentsMerged", 11)
        transient = await peer.call(
            "CreateTransientSegment",
            request_id=4,
            writer_id=5,
            segment=SEGMENT,
            delegation_token="",
        )
        assert transient["segment"].startswith(SEGMENT + "#transient." + f"{5:032x}.")
        sealed = await peer.call("SealSegment", request_id=5, segment=SEGMENT, delegation_token="")
        assert sealed.name == "SegmentSealed"
        twice = await peer.call("SealSegment", request_id=6, segment=SEGMENT, delegation_token="")
        assert twice.name == "SegmentIsSealed"
        await peer.call(
            "SetupAppend", request_id=7, writer_id=1, segment=SEGMENT, delegation_token=""
        )
        refused = await peer.call(
            "AppendBlockEnd",
            writer_id=1,
            size_of_whole_events=11,
            data=event(b"new"),
            num_event=1,
            last_event_number=1,
            request_id=8,
        )
        assert (refused.name, refused["segment"]) == ("SegmentIsSealed", SEGMENT)
        deleted = await peer.call(
            "DeleteSegment", request_id=9, segment=SEGMENT, delegation_token=""
        )
        assert deleted.name == "SegmentDeleted"
        gone = await peer.call("DeleteSegment", request_id=10, segment=SEGMENT, delegation_token="")
        assert gone.name == "NoSuchSegment"

    run(scenario)


def test_conditional_appends_check_the_segment_length():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        peer = await connect()
        await peer.call(
            "SetupAppend", request_id=1, writer_id=3, segment=SEGMENT, delegation_token=""
        )
        stale = await peer.call(
            "ConditionalAppend",
            writer_id=3,
            event_number=1,
            expected_offset=5,
            event=event(b"x"),
            request_id=2,
        )
        assert stale.name == "ConditionalCheckFailed"
        done = await peer.call(
            "ConditionalAppend",
            writer_id=3,
            event_number=1,
            expected_offset=0,
            event=event(b"x"),
            request_id=3,
        )
        assert (done.name, done["current_segment_write_offset"]) == ("DataAppended", 9)

    run(scenario)


def test_segment_attributes_compare_and_set():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        peer = await connect()
        target = {"segment_name": SEGMENT, "attribute_id": 42, "delegation_token": ""}
        unset = await peer.call("GetSegmentAttribute", request_id=1, **target)
        assert unset["value"] == NULL_ATTRIBUTE_VALUE
        update = await peer.call(
            "UpdateSegmentAttribute",
            request_id=2,
            new_value=7,
            expected_value=NULL_ATTRIBUTE_VALUE,
            **target,
        )
        assert update["success"] is True
        stale = await peer.call(
            "UpdateSegmentAttribute", request_id=3, new_value=8, expected_value=1, **target
        )
        assert stale["success"] is False
        assert (await peer.call("GetSegmentAttribute", request_id=4, **target))["value"] == 7

    run(scenario)


def test_table_updates_are_conditional_on_key_versions():
    async def scenario(segments, connect, server) -> None:
        peer = await connect()
        table = {"segment": "scope/_RGgroup", "delegation_token": ""}
        created = await peer.call("CreateTableSegment", request_id=1, **table)
        assert created.name == "SegmentCreated"

        async def update(key: bytes, value: bytes, version: int) -> Command:
            return await peer.call(
                "UpdateTableEntries",
                request_id=2,
                table_entries=[(WireTableKey(key, version), value)],
                table_segment_offset=-1,
                **table,
            )

        first = await update(b"k", b"v1", KEY_NOT_EXISTS)
        (version,) = first["updated_versions"]
        assert (await update(b"k", b"v2", KEY_NOT_EXISTS)).name == "TableKeyBadVersion"
        assert (await update(b"k", b"v2", version + 1)).name == "TableKeyBadVersion"
        assert (await update(b"other", b"x", 5)).name == "TableKeyDoesNotExist"
        second = await update(b"k", b"v2", version)
        assert second["updated_versions"][0] > version
        await update(b"j", b"w", KEY_NO_VERSION)
        got = await peer.call(
            "ReadTable",
            request_id=3,
            keys=[WireTableKey(b"k", KEY_NO_VERSION), WireTableKey(b"none", KEY_NO_VERSION)],
            **table,
        )
        assert got["entries"] == [
            (WireTableKey(b"k", second["updated_versions"][0]), b"v2"),
            (WireTableKey(b"none", KEY_NOT_EXISTS), b""),
        ]
        delta = await peer.call(
            "ReadTableEntriesDelta", request_id=4, from_position=0, suggested_entry_count=1, **table
        )
        assert [key.data for key, _ in delta["entries"]] == [b"k"]
        assert not delta["reached_end"]
        rest = await peer.call(
            "ReadTableEntriesDelta",
            request_id=5,
            from_position=delta["last_position"],
            suggested_entry_count=10,
            **table,
        )
        assert ([key.data for key, _ in rest["entries"]], rest["reached_end"]) == ([b"j"], True)
        keys = await peer.call(
            "ReadTableKeys", request_id=6, suggested_key_count=1, continuation_token=b"", **table
        )
        assert [key.data for key in keys["keys"]] == [b"j"]
        entries = await peer.call(
            "ReadTableEntries",
            request_id=7,
            suggested_entry_count=10,
            continuation_token=keys["continuation_token"],
            **table,
        )
        assert [(key.data, value) for key, value in entries["entries"]] == [(b"k", b"v2")]
        removed = await peer.call(
            "RemoveTableKeys",
            request_id=8,
            keys=[WireTableKey(b"j", KEY_NO_VERSION)],
            table_segment_offset=-1,
            **table,
        )
        assert removed.name == "TableKeysRemoved"
        not_empty = await peer.call("DeleteTableSegment", request_id=9, must_be_empty=True, **table)
        assert not_empty.name == "TableSegmentNotEmpty"
        deleted = await peer.call("DeleteTableSegment", request_id=10, must_be_empty=False, **table)
        assert deleted.name == "SegmentDeleted"
        assert segments.stored_bytes == 0

    run(scenario)


def test_a_conditional_append_of_another_type_than_event_closes_the_connection():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        peer = await connect()
        await peer.call(
            "SetupAppend", request_id=1, writer_id=3, segment=SEGMENT, delegation_token=""
        )
        not_an_event = (1).to_bytes(4, "big") + event(b"x")[4:]
        peer.writer.write(
            encode(
                "ConditionalAppend",
                writer_id=3,
                event_number=1,
                expected_offset=0,
                event=not_an_event,
                request_id=2,
            )
        )
        assert await peer.closed() == b""
        assert segments.get(SEGMENT).length == 0

    run(scenario)


def test_a_truncation_past_the_end_is_refused():
    async def scenario(segments, connect, server) -> None:
        segments.create(SEGMENT)
        segments.append(SEGMENT, event(b"abc"))
        peer = await connect()
        refused = await peer.call(
            "TruncateSegment",
            request_id=1,
            segment=SEGMENT,
            truncation_offset=12,
            delegation_token="",
        )
        assert (refused.name, refused["start_offset"], refused["offset"]) == (
            "SegmentIsTruncated",
            11,
            12,
        )
        assert segments.get(SEGMENT).start == 0

    run(scenario)


def test_an_unknown_command_closes_the_connection():
    async def scenario(segments, connect, server) -> None:
        peer = await connect()
        peer.writer.write((12345).to_bytes(4, "big") + (0).to_bytes(4, "big"))
        await peer.writer.drain()
        assert await asyncio.wait_for(peer.reader.read(), 5) == b""

    run(scenario)
