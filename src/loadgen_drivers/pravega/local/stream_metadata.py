"""What the local Pravega's controller knows: scopes, streams (their segments, configuration,
sealed state) and transactions, kept in memory and applied to :class:`Segments` directly.

A real controller asks the segment store to create, seal, merge and delete segments; here both
run on one asyncio loop in one process, so each operation runs whole between awaits. Streams
never scale: a stream has one epoch (0) of ``minNumSegments`` segments splitting the key space
[0, 1) evenly, which is all a fixed scaling policy ever has.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from loadgen_drivers.pravega.local.controller_messages import (
    CreatedTxn,
    CreateScopeStatus,
    CreateStreamStatus,
    DeleteScopeStatus,
    DeleteStreamStatus,
    HeadSegment,
    ListStatus,
    PingTxnStatus,
    SegmentId,
    SegmentRange,
    StreamConfig,
    StreamInfo,
    StreamPage,
    TxnState,
    TxnStatus,
    UpdateStreamStatus,
)
from loadgen_drivers.pravega.local.segments import Segments

PAGE_LIMIT = 1000
"""Scopes or streams per listing page, as Pravega's controller."""
FIXED_NUM_SEGMENTS = 0
"""``ScalingPolicyType``'s fixed policy: the only one the local Pravega follows."""
REAP_INTERVAL_S = 1.0
"""How often :meth:`StreamMetadata.reap` runs: leases and aborted segments end within this."""
ABORTED_KEPT_S = 10.0
"""How long an aborted transaction's segments stay (sealed) before they are deleted. Pravega
deletes them in the background, after the abort has returned; a client whose write to the
transaction is still being set up then finds the segment sealed, not gone (gone, the Rust
client panicked in a background task)."""

_NAME = re.compile(r"_?[A-Za-z0-9.\-]{1,255}")
"""Scope and stream names Pravega accepts (``NameUtils.validateStreamName``: an optional ``_``
for its internal streams, then letters, digits, dots and dashes)."""


class NotFound(Exception):
    """A stream, epoch or segment the controller does not know: the gRPC call fails NOT_FOUND,
    as Pravega's controller answers a DataNotFoundException (the client does not retry it)."""


def segment_name(scope: str, stream: str, segment_id: int, txn_id: int | None = None) -> str:
    """The qualified segment name the client computes (``NameUtils`` in its ``shared`` crate):
    ``scope/stream/N.#epoch.E``, a transaction's with ``#transaction.`` and the id's two 64-bit
    halves in 16 hex digits each after it."""
    name = f"{scope}/{stream}/{segment_id & 0xFFFFFFFF}.#epoch.{segment_id >> 32}"
    if txn_id is None:
        return name
    return f"{name}#transaction.{txn_id >> 64:016x}{txn_id & (1 << 64) - 1:016x}"


def new_txn_id(epoch: int) -> int:
    """A 128-bit transaction id with the epoch in its top 32 bits (the client's
    ``TxId.get_epoch``). Both halves stay below 2**63: the client joins them as
    ``high as u128 << 64 | low as u128``, which a negative ``low`` would sign-extend over
    ``high``."""
    high = epoch << 32 | secrets.randbits(31)
    return high << 64 | secrets.randbits(63)


@dataclass
class Transaction:
    segments: list[tuple[str, str]]
    """(transaction segment, the segment it merges into) per segment of its epoch."""
    deadline: float
    state: TxnState = TxnState.OPEN


@dataclass
class Stream:
    config: StreamConfig
    segments: list[SegmentRange]
    sealed: bool = False
    transactions: dict[int, Transaction] = field(default_factory=dict)


class StreamMetadata:
    """The controller's answers, one method per RPC; statuses are Controller.proto's enums."""

    def __init__(self, segments: Segments, clock: Callable[[], float] = time.monotonic) -> None:
        self._segments = segments
        self._clock = clock
        self._scopes: dict[str, dict[str, Stream]] = {}
        self._aborted: list[tuple[float, str]] = []
        """(when to delete, segment) for aborted transactions' segments, oldest first."""

    # --- scopes ----------------------------------------------------------------------------

    def create_scope(self, scope: str) -> CreateScopeStatus:
        if not _NAME.fullmatch(scope):
            return CreateScopeStatus.INVALID_SCOPE_NAME
        if scope in self._scopes:
            return CreateScopeStatus.SCOPE_EXISTS
        self._scopes[scope] = {}
        return CreateScopeStatus.SUCCESS

    def scope_exists(self, scope: str) -> bool:
        return scope in self._scopes

    def delete_scope(self, scope: str) -> DeleteScopeStatus:
        streams = self._scopes.get(scope)
        if streams is None:
            return DeleteScopeStatus.SCOPE_NOT_FOUND
        if streams:
            return DeleteScopeStatus.SCOPE_NOT_EMPTY
        del self._scopes[scope]
        return DeleteScopeStatus.SUCCESS

    def list_scopes(self, token: str, limit: int = PAGE_LIMIT) -> tuple[list[str], str]:
        """The page of scope names after ``token`` (the last name of the previous page) and the
        token for the next; an empty page ends the listing."""
        page = sorted(name for name in self._scopes if name > token)[:limit]
        return page, page[-1] if page else token

    # --- streams ---------------------------------------------------------------------------

    def create_stream(self, config: StreamConfig) -> CreateStreamStatus:
        scope, name = config.stream.scope, config.stream.stream
        if not _NAME.fullmatch(name):
            return CreateStreamStatus.INVALID_STREAM_NAME
        streams = self._scopes.get(scope)
        if streams is None:
            return CreateStreamStatus.SCOPE_NOT_FOUND
        if name in streams:
            return CreateStreamStatus.STREAM_EXISTS
        count = max(1, config.scaling.min_num_segments)
        _say_if_scaling(config, count)
        ranges = [
            SegmentRange(config.stream, number, number / count, (number + 1) / count)
            for number in range(count)
        ]
        for segment in ranges:
            self._segments.create(segment_name(scope, name, segment.segment_id))
        streams[name] = Stream(config, ranges)
        return CreateStreamStatus.SUCCESS

    def stream_exists(self, stream: StreamInfo) -> bool:
        return stream.stream in self._scopes.get(stream.scope, {})

    def stream_config(self, stream: StreamInfo) -> StreamConfig:
        return self._stream(stream).config

    def update_stream(self, config: StreamConfig) -> UpdateStreamStatus:
        """Keeps the new configuration (tags, retention, policy); the segments stay as created,
        since the local Pravega never scales."""
        streams = self._scopes.get(config.stream.scope)
        if streams is None:
            return UpdateStreamStatus.SCOPE_NOT_FOUND
        stream = streams.get(config.stream.stream)
        if stream is None:
            return UpdateStreamStatus.STREAM_NOT_FOUND
        _say_if_scaling(config, len(stream.segments))
        stream.config = config
        return UpdateStreamStatus.SUCCESS

    def seal_stream(self, info: StreamInfo) -> UpdateStreamStatus:
        """Aborts the stream's open transactions, then seals its segments (Pravega's
        SealStreamTask does the same, in that order)."""
        streams = self._scopes.get(info.scope)
        if streams is None:
            return UpdateStreamStatus.SCOPE_NOT_FOUND
        stream = streams.get(info.stream)
        if stream is None:
            return UpdateStreamStatus.STREAM_NOT_FOUND
        for txn in stream.transactions.values():
            if txn.state is TxnState.OPEN:
                self._abort(txn)
        for segment in stream.segments:
            self._segments.seal(segment_name(info.scope, info.stream, segment.segment_id))
        stream.sealed = True
        return UpdateStreamStatus.SUCCESS

    def delete_stream(self, info: StreamInfo) -> DeleteStreamStatus:
        stream = self._scopes.get(info.scope, {}).get(info.stream)
        if stream is None:
            return DeleteStreamStatus.STREAM_NOT_FOUND
        if not stream.sealed:
            return DeleteStreamStatus.STREAM_NOT_SEALED
        for segment in stream.segments:
            self._segments.delete(segment_name(info.scope, info.stream, segment.segment_id))
        for txn in stream.transactions.values():
            for txn_segment, _parent in txn.segments:
                if self._segments.exists(txn_segment):
                    self._segments.delete(txn_segment)
        del self._scopes[info.scope][info.stream]
        return DeleteStreamStatus.SUCCESS

    def list_streams(self, scope: str, token: str, limit: int = PAGE_LIMIT) -> StreamPage:
        streams = self._scopes.get(scope)
        if streams is None:
            return StreamPage([], token, ListStatus.SCOPE_NOT_FOUND)
        page = sorted(name for name in streams if name > token)[:limit]
        infos = [StreamInfo(scope, name) for name in page]
        return StreamPage(infos, page[-1] if page else token, ListStatus.SUCCESS)

    # --- segments --------------------------------------------------------------------------

    def current_segments(self, info: StreamInfo) -> list[SegmentRange]:
        """The segments to write to: none once sealed, as Pravega answers."""
        stream = self._stream(info)
        return [] if stream.sealed else stream.segments

    def epoch_segments(self, info: StreamInfo, epoch: int) -> list[SegmentRange]:
        stream = self._stream(info)
        if epoch != 0:
            raise NotFound(f"{info.scope}/{info.stream} has no epoch {epoch}")
        return stream.segments

    def head_segments(self, info: StreamInfo) -> list[HeadSegment]:
        """Where a reader starts: every segment at its first offset not truncated away."""
        stream = self._stream(info)
        return [
            HeadSegment(
                SegmentId(info, segment.segment_id),
                self._segments.get(segment_name(info.scope, info.stream, segment.segment_id)).start,
            )
            for segment in stream.segments
        ]

    # --- transactions ----------------------------------------------------------------------

    def create_transaction(self, info: StreamInfo, lease_ms: int) -> CreatedTxn:
        """Opens a transaction with one transaction segment per current segment."""
        stream = self._stream(info)
        if stream.sealed:
            raise NotFound(f"{info.scope}/{info.stream} is sealed")
        self._delete_aborted()
        txn_id = new_txn_id(epoch=0)
        pairs = []
        for segment in stream.segments:
            parent = segment_name(info.scope, info.stream, segment.segment_id)
            txn_segment = segment_name(info.scope, info.stream, segment.segment_id, txn_id)
            self._segments.create(txn_segment)
            pairs.append((txn_segment, parent))
        stream.transactions[txn_id] = Transaction(pairs, self._clock() + lease_ms / 1000)
        return CreatedTxn(txn_id, stream.segments)

    def ping_transaction(self, info: StreamInfo, txn_id: int, lease_ms: int) -> PingTxnStatus:
        txn = self._transaction(info, txn_id)
        if txn is None:
            return PingTxnStatus.UNKNOWN
        if txn.state is TxnState.OPEN:
            txn.deadline = self._clock() + lease_ms / 1000
            return PingTxnStatus.OK
        return PingTxnStatus.COMMITTED if txn.state is TxnState.COMMITTED else PingTxnStatus.ABORTED

    def commit_transaction(self, info: StreamInfo, txn_id: int) -> TxnStatus:
        """Merges every transaction segment into its parent, in segment order, at once: the
        transaction is COMMITTED when this returns. Committing twice succeeds, as Pravega's."""
        return self._end_transaction(info, txn_id, TxnState.COMMITTED, self._commit)

    def abort_transaction(self, info: StreamInfo, txn_id: int) -> TxnStatus:
        return self._end_transaction(info, txn_id, TxnState.ABORTED, self._abort)

    def _end_transaction(
        self,
        info: StreamInfo,
        txn_id: int,
        ending: TxnState,
        end: Callable[[Transaction], None],
    ) -> TxnStatus:
        """Ends an open transaction with ``end``; SUCCESS if it is (or already was) ``ending``."""
        if not self.stream_exists(info):
            return TxnStatus.STREAM_NOT_FOUND
        txn = self._transaction(info, txn_id)
        if txn is None:
            return TxnStatus.TRANSACTION_NOT_FOUND
        if txn.state is TxnState.OPEN:
            end(txn)
        return TxnStatus.SUCCESS if txn.state is ending else TxnStatus.FAILURE

    def transaction_state(self, info: StreamInfo, txn_id: int) -> TxnState:
        txn = self._transaction(info, txn_id)
        return TxnState.UNKNOWN if txn is None else txn.state

    # --- helpers ---------------------------------------------------------------------------

    def _stream(self, info: StreamInfo) -> Stream:
        stream = self._scopes.get(info.scope, {}).get(info.stream)
        if stream is None:
            raise NotFound(f"stream {info.scope}/{info.stream}")
        return stream

    def reap(self) -> None:
        """Aborts the open transactions whose lease ran out and deletes the aborted segments
        whose time has come. The controller runs it every :data:`REAP_INTERVAL_S`, as
        Pravega's works in the background: neither waits for a client's next call."""
        for streams in self._scopes.values():
            for stream in streams.values():
                for txn in stream.transactions.values():
                    self._expire(txn)
        self._delete_aborted()

    def _transaction(self, info: StreamInfo, txn_id: int) -> Transaction | None:
        """The transaction, aborted first if its lease ran out since the last :meth:`reap`."""
        stream = self._scopes.get(info.scope, {}).get(info.stream)
        txn = None if stream is None else stream.transactions.get(txn_id)
        if txn is not None:
            self._expire(txn)
        return txn

    def _expire(self, txn: Transaction) -> None:
        """Pravega's controller aborts a transaction nobody pinged within its lease."""
        if txn.state is TxnState.OPEN and self._clock() > txn.deadline:
            self._abort(txn)

    def _commit(self, txn: Transaction) -> None:
        for txn_segment, parent in txn.segments:
            self._segments.merge(parent, txn_segment)
        txn.state = TxnState.COMMITTED

    def _abort(self, txn: Transaction) -> None:
        """Seals the transaction's segments now and deletes them :data:`ABORTED_KEPT_S` later
        (at the first :meth:`reap` or transaction created after that)."""
        delete_at = self._clock() + ABORTED_KEPT_S
        for txn_segment, _parent in txn.segments:
            if self._segments.exists(txn_segment):
                self._segments.seal(txn_segment)
                self._aborted.append((delete_at, txn_segment))
        txn.state = TxnState.ABORTED

    def _delete_aborted(self) -> None:
        now = self._clock()
        while self._aborted and self._aborted[0][0] <= now:
            _, txn_segment = self._aborted.pop(0)
            if self._segments.exists(txn_segment):
                self._segments.delete(txn_segment)


def _say_if_scaling(config: StreamConfig, count: int) -> None:
    """A stream that asks for auto-scaling still gets a fixed set of segments: the log says so,
    since a driver's split and merge paths then go untested."""
    policy = config.scaling.scale_type
    if policy != FIXED_NUM_SEGMENTS:
        stream = f"{config.stream.scope}/{config.stream.stream}"
        print(
            f"controller: stream {stream} asks for scaling policy {policy}; it keeps its "
            f"{count} segments, since the local Pravega never scales",
            flush=True,
        )
