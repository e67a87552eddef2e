"""The local Pravega's segment store through the real ``pravega_client`` (the Rust client): for
each wire command the client sends, a test whose client operation succeeds with exact data, and
the log line ``served <Command>`` proving the client really sent it.

The Rust client can block for a minute (its retries) or for ever against a server that answers
wrongly, and can panic (``PanicException``, a BaseException): every blocking call runs in a
thread with a deadline, every awaited one under ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pravega_client
import pytest
from client_calls import ClientError, guarded

pytestmark = pytest.mark.timeout(60)

EVENT_HEADER = 8
"""Bytes before each event's data in a segment (type code 0, length)."""


def assert_served(log_path: str, command: str, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while f"served {command}\n" not in Path(log_path).read_text():
        assert time.monotonic() < deadline, f"the log never says 'served {command}'"
        time.sleep(0.05)


@pytest.fixture
def manager(controller_uri):
    return pravega_client.StreamManager(controller_uri)


@pytest.fixture
def scope(manager):
    name = f"s{uuid.uuid4().hex[:10]}"
    assert guarded(manager.create_scope, name)
    return name


def stream(manager, scope: str, segments: int = 1) -> str:
    name = f"st{uuid.uuid4().hex[:8]}"
    assert guarded(manager.create_stream, scope, name, segments)
    return name


async def read_events(reader, count: int, timeout: float = 15.0) -> list[bytes]:
    """Reads slices until ``count`` events arrived, releasing each slice."""
    events: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"read {len(events)} of {count} events: {events}"
        piece = await asyncio.wait_for(reader.get_segment_slice_async(), left)
        events.extend(event.data() for event in piece)
        reader.release_segment(piece)
    return events


def read(reader, count: int) -> list[bytes]:
    return asyncio.run(asyncio.wait_for(read_events(reader, count), 20))


def new_reader(manager, scope: str, name: str, reader: str = "r1"):
    group = guarded(manager.create_reader_group, f"rg{uuid.uuid4().hex[:8]}", scope, name)
    return group, guarded(group.create_reader, reader)


def test_events_from_several_writers_are_read_back_exactly(manager, scope, local_pravega):
    """Hello, SetupAppend, AppendBlockEnd, ReadSegment: two writers, routing keys over two
    segments, every event read back once and in order per routing key."""
    name = stream(manager, scope, segments=2)
    first = guarded(manager.create_writer, scope, name)
    second = guarded(manager.create_writer, scope, name)
    for i in range(30):
        guarded(first.write_event, f"a-{i % 3}-{i}", f"key{i % 3}")
    for i in range(10):
        guarded(second.write_event_bytes, f"b-{i}".encode(), "keyb")

    async def write_async() -> None:
        for i in range(10):
            await asyncio.wait_for(first.write_event_async(f"c-{i}", "keyc"), 10)

    asyncio.run(write_async())
    guarded(first.flush)
    guarded(second.flush)
    _, reader = new_reader(manager, scope, name)
    events = [event.decode() for event in read(reader, 50)]
    assert len(events) == 50
    expected = (
        [f"a-{i % 3}-{i}" for i in range(30)]
        + [f"b-{i}" for i in range(10)]
        + [f"c-{i}" for i in range(10)]
    )
    assert sorted(events) == sorted(expected)
    for key in ("a-0", "a-1", "a-2", "b", "c"):
        mine = [event for event in events if event.startswith(key + "-")]
        assert mine == [event for event in expected if event.startswith(key + "-")]
    for command in ("Hello", "SetupAppend", "AppendBlockEnd", "ReadSegment"):
        assert_served(local_pravega.log_path, command)


def test_a_read_at_the_tail_gets_data_written_later(manager, scope):
    """ReadSegment at the tail waits for data: the reader sees an event written after it
    started reading, well within a tail wait."""
    name = stream(manager, scope)
    _, reader = new_reader(manager, scope, name)
    writer = guarded(manager.create_writer, scope, name)

    async def scenario() -> tuple[list[bytes], float]:
        reading = asyncio.ensure_future(read_events(reader, 1, timeout=10))
        await asyncio.sleep(0.5)
        written = time.monotonic()
        await asyncio.wait_for(writer.write_event_async("late"), 10)
        return await reading, time.monotonic() - written

    events, delay = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert events == [b"late"]
    assert delay < 3.0


def test_transaction_events_appear_once_committed(manager, scope, local_pravega):
    """Transactions: the client appends to the transaction's segment (SetupAppend,
    AppendBlockEnd there); committed events are read back, aborted ones never."""
    name = stream(manager, scope)
    writer = guarded(manager.create_transaction_writer, scope, name, 7)
    aborted = guarded(writer.begin_txn)
    guarded(aborted.write_event, "dropped")
    committed = guarded(writer.begin_txn)
    for event in ("t1", "t2", "t3"):
        guarded(committed.write_event, event)
    guarded(committed.commit)
    # Aborted last: a transaction's write returns before its append is set up, and the local
    # controller deletes an aborted transaction's segment at once.
    guarded(aborted.abort)
    plain = guarded(manager.create_writer, scope, name)
    guarded(plain.write_event, "after")
    guarded(plain.flush)
    _, reader = new_reader(manager, scope, name)
    assert read(reader, 4) == [b"t1", b"t2", b"t3", b"after"]
    assert_served(local_pravega.log_path, "AppendBlockEnd")


def test_a_sealed_stream_refuses_writes_and_its_end_is_reported(manager, scope, local_pravega):
    """SegmentIsSealed on append, end of segment on read: a write after the seal fails, and the
    reader reads everything then asks the controller what follows the ended segment."""
    name = stream(manager, scope)
    writer = guarded(manager.create_writer, scope, name)
    for i in range(5):
        guarded(writer.write_event, f"e{i}")
    guarded(writer.flush)
    assert guarded(manager.seal_stream, scope, name)
    with pytest.raises(ClientError):
        guarded(writer.write_event, "too late")
    _, reader = new_reader(manager, scope, name)
    assert read(reader, 5) == [f"e{i}".encode() for i in range(5)]
    assert_served(local_pravega.log_path, "getSegmentsImmediatelyFollowing")


def test_reader_group_state_lives_in_table_segments(manager, scope, local_pravega):
    """CreateTableSegment, UpdateTableEntries, ReadTableEntriesDelta, DeleteTableSegment: the
    group's state records where an offline reader stopped, exactly, and goes with the group."""
    name = stream(manager, scope)
    writer = guarded(manager.create_writer, scope, name)
    for event in ("abc", "defg"):
        guarded(writer.write_event, event)
    guarded(writer.flush)
    group_name = f"rg{uuid.uuid4().hex[:8]}"
    group = guarded(manager.create_reader_group, group_name, scope, name)
    reader = guarded(group.create_reader, "r1")
    assert "{0: 0}" in guarded(group.get_streamcut).to_str()
    assert read(reader, 2) == [b"abc", b"defg"]
    guarded(reader.reader_offline)
    end = 2 * EVENT_HEADER + len("abc") + len("defg")
    deadline = time.monotonic() + 10
    while f"{{0: {end}}}" not in guarded(group.get_streamcut).to_str():
        assert time.monotonic() < deadline, guarded(group.get_streamcut).to_str()
        time.sleep(0.1)
    guarded(manager.delete_reader_group, group_name, scope)
    for command in (
        "CreateTableSegment",
        "UpdateTableEntries",
        "ReadTableEntriesDelta",
        "DeleteTableSegment",
    ):
        assert_served(local_pravega.log_path, command)


def test_byte_stream_appends_conditionally_and_truncates(manager, scope, local_pravega):
    """ConditionalBlockEnd, GetStreamSegmentInfo, ReadSegment, TruncateSegment: the byte
    stream's bytes come back exactly, its tail and head offsets follow writes and truncation."""
    name = stream(manager, scope)
    data = guarded(manager.create_byte_stream, scope, name)
    assert guarded(data.write, b"hello world") == 11
    guarded(data.flush)
    assert guarded(data.current_tail_offset) == 11
    assert guarded(data.current_head_offset) == 0
    guarded(data.seek, 0, 0)
    buffer = bytearray(11)
    assert guarded(data.readinto, buffer) == 11
    assert bytes(buffer) == b"hello world"
    guarded(data.truncate, 6)
    assert guarded(data.current_head_offset) == 6
    for command in ("ConditionalBlockEnd", "GetStreamSegmentInfo", "TruncateSegment"):
        assert_served(local_pravega.log_path, command)
