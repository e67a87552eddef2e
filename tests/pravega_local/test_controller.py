"""The local Pravega's controller through the real ``pravega_client`` (the Rust client): one
test per RPC it answers that the client calls, with exact results, and the log line
``served <rpc>`` proving the client really asked.

The Rust client can block for a minute (its retries) or for ever against a server that answers
wrongly, and can panic (``PanicException``, a BaseException): every call runs in a thread with
a deadline, and anything it raises becomes a :class:`ClientError`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import pravega_client
import pytest
from client_calls import ClientError, guarded

pytestmark = pytest.mark.timeout(60)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def served(broker: Any, *rpcs: str) -> bool:
    lines = set(Path(broker.log_path).read_text().splitlines())
    return all(f"served {rpc}" in lines for rpc in rpcs)


@pytest.fixture
def manager(controller_uri: str) -> Any:
    return guarded(pravega_client.StreamManager, controller_uri)


@pytest.fixture
def scope(manager: Any) -> str:
    name = unique("scope")
    assert guarded(manager.create_scope, name) is True
    return name


def read_events(manager: Any, scope: str, stream: str, expected: int) -> list[bytes]:
    """Reads from the head until ``expected`` events came, or 10 s passed."""
    group = guarded(manager.create_reader_group, unique("rg"), scope, stream)
    reader = guarded(group.create_reader, "reader-1")

    async def drain() -> list[bytes]:
        events: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(events) < expected and time.monotonic() < deadline:
            try:
                segment = await asyncio.wait_for(reader.get_segment_slice_async(), 2)
            except TimeoutError:
                continue
            events.extend(event.data() for event in segment)
            reader.release_segment(segment)
        return events

    try:
        return guarded(asyncio.run, drain())
    finally:
        guarded(reader.reader_offline)


def test_create_scope_says_whether_it_was_new(manager, local_pravega):
    name = unique("scope")
    assert guarded(manager.create_scope, name) is True
    assert guarded(manager.create_scope, name) is False
    with pytest.raises(ClientError, match="Invalid scope"):
        guarded(manager.create_scope, "no spaces")
    assert served(local_pravega, "createScope")


def test_list_scope_lists_every_created_scope_once(manager, local_pravega):
    created = {unique("listed") for _ in range(3)}
    for name in created:
        guarded(manager.create_scope, name)
    listed = guarded(manager.list_scope)
    assert created <= set(listed)
    assert len(listed) == len(set(listed))
    assert served(local_pravega, "listScopes")


def test_delete_scope_only_when_empty(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "stream", 1)
    with pytest.raises(ClientError, match="Scope not empty"):
        guarded(manager.delete_scope, scope)
    guarded(manager.seal_stream, scope, "stream")
    guarded(manager.delete_stream, scope, "stream")
    assert guarded(manager.delete_scope, scope) is True
    assert guarded(manager.delete_scope, scope) is False
    assert scope not in guarded(manager.list_scope)
    assert served(local_pravega, "deleteScope")


def test_create_stream_says_whether_it_was_new(manager, scope, local_pravega):
    assert guarded(manager.create_stream, scope, "stream", 3) is True
    assert guarded(manager.create_stream, scope, "stream", 3) is False
    with pytest.raises(ClientError, match="Scope Not Found"):
        guarded(manager.create_stream, unique("missing"), "stream", 1)
    assert served(local_pravega, "createStream")


def test_list_stream_equals_the_streams_created(manager, scope, local_pravega):
    assert guarded(manager.list_stream, scope) == []
    names = ["a", "b.1", "c-2"]
    for name in names:
        guarded(manager.create_stream, scope, name, 1)
    assert sorted(guarded(manager.list_stream, scope)) == names
    assert served(local_pravega, "listStreamsInScope")


def test_stream_tags_read_back_and_update(manager, scope, local_pravega):
    policy = pravega_client.StreamScalingPolicy.fixed_scaling_policy(2)
    retention = pravega_client.StreamRetentionPolicy.none()
    guarded(manager.create_stream_with_policy, scope, "tagged", policy, retention, ["x", "y"])
    assert guarded(manager.get_stream_tags, scope, "tagged") == ["x", "y"]
    assert guarded(manager.update_stream_with_policy, scope, "tagged", policy, retention, ["z"])
    assert guarded(manager.get_stream_tags, scope, "tagged") == ["z"]
    assert served(local_pravega, "getStreamConfiguration", "updateStream")


def test_delete_stream_needs_it_sealed_first(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "doomed", 2)
    with pytest.raises(ClientError, match="Stream Not Sealed"):
        guarded(manager.delete_stream, scope, "doomed")
    assert guarded(manager.seal_stream, scope, "doomed") is True
    assert guarded(manager.delete_stream, scope, "doomed") is True
    assert guarded(manager.delete_stream, scope, "doomed") is False
    assert guarded(manager.list_stream, scope) == []
    assert served(local_pravega, "sealStream", "deleteStream")


def test_written_events_read_back_from_every_segment(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "events", 3)
    writer = guarded(manager.create_writer, scope, "events")
    sent = [f"event-{n}".encode() for n in range(12)]
    for n, event in enumerate(sent):
        guarded(writer.write_event_bytes, event, f"key-{n}")
    guarded(writer.flush)
    assert sorted(read_events(manager, scope, "events", len(sent))) == sorted(sent)
    assert served(local_pravega, "getCurrentSegments", "getURI", "getSegments")


def test_reader_group_create_and_delete(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "grouped", 1)
    guarded(manager.create_reader_group, "group", scope, "grouped")
    guarded(manager.delete_reader_group, "group", scope)
    assert served(local_pravega, "getSegments")


def test_writer_on_a_sealed_stream_is_refused(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "sealed", 1)
    writer = guarded(manager.create_writer, scope, "sealed")
    guarded(writer.write_event, "before")
    guarded(writer.flush)
    guarded(manager.seal_stream, scope, "sealed")
    with pytest.raises(ClientError):
        guarded(writer.write_event, "after")
        guarded(writer.flush)
    assert served(local_pravega, "getSegmentsImmediatelyFollowing")


def test_committed_transaction_events_are_read(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "txn", 2)
    txn_writer = guarded(manager.create_transaction_writer, scope, "txn", 7)
    txn = guarded(txn_writer.begin_txn)
    for n in range(4):
        guarded(txn.write_event, f"txn-{n}", f"key-{n}")
    assert guarded(txn.is_open) is True
    guarded(txn.commit)
    assert guarded(txn.is_open) is False
    events = read_events(manager, scope, "txn", 4)
    assert sorted(events) == [f"txn-{n}".encode() for n in range(4)]
    assert served(local_pravega, "createTransaction", "commitTransaction", "checkTransactionState")


def test_aborted_transaction_events_are_dropped(manager, scope, local_pravega):
    guarded(manager.create_stream, scope, "aborted", 1)
    txn_writer = guarded(manager.create_transaction_writer, scope, "aborted", 8)
    txn = guarded(txn_writer.begin_txn)
    guarded(txn.write_event, "dropped")
    guarded(txn.abort)
    assert guarded(txn.is_open) is False
    writer = guarded(manager.create_writer, scope, "aborted")
    guarded(writer.write_event, "kept")
    guarded(writer.flush)
    assert read_events(manager, scope, "aborted", 1) == [b"kept"]
    assert served(local_pravega, "abortTransaction")


def test_get_txn_finds_a_transaction_by_its_id(manager, scope, local_pravega):
    """The client's get_txn marks even an open transaction closed to writes (its
    TransactionInfo is built closed), so only its state is checked here."""
    guarded(manager.create_stream, scope, "found", 2)
    txn_writer = guarded(manager.create_transaction_writer, scope, "found", 9)
    begun = guarded(txn_writer.begin_txn)
    txn_id = guarded(begun.get_txn_id)
    assert guarded(guarded(txn_writer.get_txn, txn_id).is_open) is True
    guarded(begun.write_event, "committed")
    guarded(begun.commit)
    assert guarded(guarded(txn_writer.get_txn, txn_id).is_open) is False
    assert read_events(manager, scope, "found", 1) == [b"committed"]
    assert served(local_pravega, "getEpochSegments")
