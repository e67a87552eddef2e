"""The controller's model without the client: what the client cannot reach in a short test
(pages past the first, transaction leases running out, pings) and the segment names."""

from __future__ import annotations

from loadgen_drivers.pravega.local.controller_messages import (
    PingTxnStatus,
    ScalingPolicy,
    StreamConfig,
    StreamInfo,
    TxnState,
    TxnStatus,
)
from loadgen_drivers.pravega.local.segments import KEY_NO_VERSION, Segments
from loadgen_drivers.pravega.local.stream_metadata import (
    ABORTED_KEPT_S,
    StreamMetadata,
    segment_name,
)

STREAM = StreamInfo("scope", "stream")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def metadata_with_stream(segments: Segments, clock: Clock, count: int = 2) -> StreamMetadata:
    metadata = StreamMetadata(segments, clock)
    metadata.create_scope(STREAM.scope)
    metadata.create_stream(StreamConfig(STREAM, ScalingPolicy(0, 0, 0, count), None, None))
    return metadata


def test_segment_names_are_the_clients():
    assert segment_name("s", "t", 3) == "s/t/3.#epoch.0"
    assert segment_name("s", "t", 2 << 32 | 1) == "s/t/1.#epoch.2"
    txn = 0x0000000100000002 << 64 | 0xAB
    assert segment_name("s", "t", 0, txn) == "s/t/0.#epoch.0#transaction.0000000100000002" + (
        "00000000000000ab"
    )


def test_listing_pages_until_an_empty_page():
    metadata = StreamMetadata(Segments())
    names = [f"scope{n}" for n in range(5)]
    for name in reversed(names):
        metadata.create_scope(name)
    pages, token = [], ""
    while True:
        page, token = metadata.list_scopes(token, limit=2)
        if not page:
            break
        pages.append(page)
    assert pages == [names[0:2], names[2:4], names[4:5]]


def test_a_stream_splits_the_key_space_evenly():
    segments = Segments()
    metadata = metadata_with_stream(segments, Clock(), count=4)
    ranges = metadata.current_segments(STREAM)
    assert [(r.min_key, r.max_key) for r in ranges] == [
        (0, 0.25),
        (0.25, 0.5),
        (0.5, 0.75),
        (0.75, 1),
    ]
    assert sorted(segments.names()) == [f"scope/stream/{n}.#epoch.0" for n in range(4)]


def test_a_transaction_not_pinged_within_its_lease_is_aborted():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    created = metadata.create_transaction(STREAM, lease_ms=1000)
    clock.now = 0.9
    assert metadata.ping_transaction(STREAM, created.txn_id, 1000) is PingTxnStatus.OK
    clock.now = 1.8
    assert metadata.transaction_state(STREAM, created.txn_id) is TxnState.OPEN
    clock.now = 2.0
    assert metadata.commit_transaction(STREAM, created.txn_id) is TxnStatus.FAILURE
    assert metadata.transaction_state(STREAM, created.txn_id) is TxnState.ABORTED
    assert metadata.ping_transaction(STREAM, created.txn_id, 1000) is PingTxnStatus.ABORTED
    aborted = [name for name in segments.names() if "#transaction." in name]
    assert len(aborted) == 2 and all(segments.get(name).sealed for name in aborted)


def test_an_aborted_transactions_segments_are_sealed_at_once_and_deleted_later():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    first = metadata.create_transaction(STREAM, lease_ms=60_000)
    assert metadata.abort_transaction(STREAM, first.txn_id) is TxnStatus.SUCCESS
    aborted = [segment_name("scope", "stream", n, first.txn_id) for n in range(2)]
    assert all(segments.get(name).sealed for name in aborted)  # a late write: sealed, not gone
    clock.now = ABORTED_KEPT_S - 0.1
    metadata.create_transaction(STREAM, lease_ms=60_000)
    assert all(segments.exists(name) for name in aborted)
    clock.now = ABORTED_KEPT_S
    metadata.create_transaction(STREAM, lease_ms=60_000)
    assert not any(segments.exists(name) for name in aborted)


def test_deleting_a_stream_deletes_its_transactions_segments():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    aborted = metadata.create_transaction(STREAM, lease_ms=60_000)
    metadata.abort_transaction(STREAM, aborted.txn_id)
    metadata.create_transaction(STREAM, lease_ms=60_000)  # left open: sealing aborts it
    metadata.seal_stream(STREAM)
    metadata.delete_stream(STREAM)
    assert segments.names() == []


def test_commit_merges_each_transaction_segment_into_its_parent():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    segments.append("scope/stream/1.#epoch.0", b"before ")
    created = metadata.create_transaction(STREAM, lease_ms=1000)
    segments.append(segment_name("scope", "stream", 1, created.txn_id), b"in txn")
    assert metadata.commit_transaction(STREAM, created.txn_id) is TxnStatus.SUCCESS
    assert segments.read("scope/stream/1.#epoch.0", 0, 100) == b"before in txn"
    assert metadata.commit_transaction(STREAM, created.txn_id) is TxnStatus.SUCCESS
    assert metadata.ping_transaction(STREAM, created.txn_id, 1000) is PingTxnStatus.COMMITTED
    assert metadata.abort_transaction(STREAM, created.txn_id) is TxnStatus.FAILURE


def test_sealing_aborts_open_transactions():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    created = metadata.create_transaction(STREAM, lease_ms=1000)
    metadata.seal_stream(STREAM)
    assert metadata.transaction_state(STREAM, created.txn_id) is TxnState.ABORTED
    assert metadata.current_segments(STREAM) == []
    assert all(segments.get(name).sealed for name in segments.names())


def test_reaping_ends_leases_and_deletes_aborted_segments_without_a_client_call():
    segments, clock = Segments(), Clock()
    metadata = metadata_with_stream(segments, clock)
    created = metadata.create_transaction(STREAM, lease_ms=1000)
    txn_segments = [segment_name("scope", "stream", n, created.txn_id) for n in range(2)]
    clock.now = 1.5
    metadata.reap()
    assert all(segments.get(name).sealed for name in txn_segments)
    clock.now = 1.5 + ABORTED_KEPT_S
    metadata.reap()
    assert not any(segments.exists(name) for name in txn_segments)
    assert metadata.transaction_state(STREAM, created.txn_id) is TxnState.ABORTED


def test_a_stream_that_asks_for_scaling_is_told_it_keeps_its_segments(capsys):
    metadata = StreamMetadata(Segments())
    metadata.create_scope("scope")
    by_rate = StreamConfig(StreamInfo("scope", "scaled"), ScalingPolicy(1, 100, 2, 3), None, None)
    metadata.create_stream(by_rate)
    assert "stream scope/scaled asks for scaling policy 1; it keeps its 3 segments" in (
        capsys.readouterr().out
    )


def test_deleting_a_table_segment_frees_its_entries():
    segments = Segments()
    segments.create("scope/_RGgroup", table=True)
    segments.update_table("scope/_RGgroup", [(b"key", b"value", KEY_NO_VERSION)])
    segments.delete("scope/_RGgroup")
    assert segments.stored_bytes == 0
