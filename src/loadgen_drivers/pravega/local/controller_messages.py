"""The Pravega controller's gRPC messages (``Controller.proto``, package
``io.pravega.controller.stream.api.grpc.v1``) that the Rust client sends or reads, by field
number, over :mod:`loadgen.base.protobuf_wire`: no protoc and no ``protobuf`` dependency.

Requests are decoded into small value types; replies are encoded from them. proto3 reads an
absent field as its default, so decoders do too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from loadgen.base.protobuf_wire import (
    VARINT,
    Field,
    decode,
    double,
    encode,
    every,
    first,
    message,
    signed,
    string,
    text,
)

SERVICE = "io.pravega.controller.stream.api.grpc.v1.ControllerService"


class CreateScopeStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    SCOPE_EXISTS = 2
    INVALID_SCOPE_NAME = 3


class DeleteScopeStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    SCOPE_NOT_FOUND = 2
    SCOPE_NOT_EMPTY = 3


class CreateStreamStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    STREAM_EXISTS = 2
    SCOPE_NOT_FOUND = 3
    INVALID_STREAM_NAME = 4


class UpdateStreamStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    STREAM_NOT_FOUND = 2
    SCOPE_NOT_FOUND = 3


class DeleteStreamStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    STREAM_NOT_FOUND = 2
    STREAM_NOT_SEALED = 3


class ListStatus(IntEnum):
    """StreamsInScopeResponse.Status."""

    SUCCESS = 0
    FAILURE = 1
    SCOPE_NOT_FOUND = 2


class TxnStatus(IntEnum):
    SUCCESS = 0
    FAILURE = 1
    STREAM_NOT_FOUND = 2
    TRANSACTION_NOT_FOUND = 3


class PingTxnStatus(IntEnum):
    OK = 0
    LEASE_TOO_LARGE = 1
    MAX_EXECUTION_TIME_EXCEEDED = 2
    DISCONNECTED = 4
    COMMITTED = 5
    ABORTED = 6
    UNKNOWN = 7


class TxnState(IntEnum):
    UNKNOWN = 0
    OPEN = 1
    COMMITTING = 2
    COMMITTED = 3
    ABORTING = 4
    ABORTED = 5


@dataclass(frozen=True)
class StreamInfo:
    scope: str
    stream: str


@dataclass(frozen=True)
class ScalingPolicy:
    scale_type: int
    target_rate: int
    scale_factor: int
    min_num_segments: int


@dataclass(frozen=True)
class RetentionPolicy:
    retention_type: int
    retention_param: int
    retention_max: int


@dataclass(frozen=True)
class StreamConfig:
    stream: StreamInfo
    scaling: ScalingPolicy
    retention: RetentionPolicy | None
    tags: tuple[str, ...] | None
    """None when the client sent no Tags message (it reads that back as "no tags")."""


@dataclass(frozen=True)
class SegmentRange:
    stream: StreamInfo
    segment_id: int
    """``epoch << 32 | number``, as the client's ``Segment.number``."""
    min_key: float
    max_key: float


@dataclass(frozen=True)
class SegmentId:
    stream: StreamInfo
    segment_id: int


@dataclass(frozen=True)
class EpochRequest:
    """GetEpochSegmentsRequest."""

    stream: StreamInfo
    epoch: int


@dataclass(frozen=True)
class CreateTxnRequest:
    stream: StreamInfo
    lease_ms: int


@dataclass(frozen=True)
class TxnRequest:
    """TxnRequest and PingTxnRequest: the stream, the 128-bit transaction id, and the lease
    a ping asks for (0 in the others)."""

    stream: StreamInfo
    txn_id: int
    lease_ms: int = 0


@dataclass(frozen=True)
class ListRequest:
    """ScopesRequest and StreamsInScopeRequest: ``scope`` is empty when listing scopes."""

    scope: str
    token: str


@dataclass(frozen=True)
class StreamPage:
    streams: list[StreamInfo]
    token: str
    status: ListStatus


@dataclass(frozen=True)
class HeadSegment:
    """SegmentsAtTime.SegmentLocation: where a reader starts in one segment."""

    segment: SegmentId
    offset: int


@dataclass(frozen=True)
class CreatedTxn:
    txn_id: int
    segments: list[SegmentRange]


# --- requests ------------------------------------------------------------------------------


def _message(value: int | bytes | None) -> list[Field]:
    return decode(value) if isinstance(value, bytes) else []


def _stream_info(fields: list[Field]) -> StreamInfo:
    return StreamInfo(text(fields, 1) or "", text(fields, 2) or "")


def decode_stream_info(data: bytes) -> StreamInfo:
    return _stream_info(decode(data))


def decode_scope(data: bytes) -> str:
    """ScopeInfo."""
    return text(decode(data), 1) or ""


def decode_scopes_request(data: bytes) -> ListRequest:
    return ListRequest("", text(_message(first(decode(data), 1)), 1) or "")


def decode_streams_request(data: bytes) -> ListRequest:
    fields = decode(data)
    scope = text(_message(first(fields, 1)), 1) or ""
    return ListRequest(scope, text(_message(first(fields, 2)), 1) or "")


def decode_stream_config(data: bytes) -> StreamConfig:
    fields = decode(data)
    scaling = _message(first(fields, 2))
    retention = first(fields, 3)
    tags = first(fields, 4)
    return StreamConfig(
        _stream_info(_message(first(fields, 1))),
        ScalingPolicy(*(signed(first(scaling, number)) for number in (1, 2, 3, 4))),
        None
        if retention is None
        else RetentionPolicy(*(signed(first(_message(retention), n)) for n in (1, 2, 3))),
        None if tags is None else tuple(t.decode() for t in every(_message(tags), 1)),
    )


def decode_segments_request(data: bytes) -> StreamInfo:
    """GetSegmentsRequest's stream; its timestamp is always 0 (the head) from the client."""
    return _stream_info(_message(first(decode(data), 1)))


def decode_segment_id(data: bytes) -> SegmentId:
    fields = decode(data)
    return SegmentId(_stream_info(_message(first(fields, 1))), signed(first(fields, 2)))


def decode_epoch_request(data: bytes) -> EpochRequest:
    fields = decode(data)
    return EpochRequest(_stream_info(_message(first(fields, 1))), signed(first(fields, 2)))


def decode_create_txn(data: bytes) -> CreateTxnRequest:
    fields = decode(data)
    return CreateTxnRequest(_stream_info(_message(first(fields, 1))), signed(first(fields, 2)))


def _txn_id(fields: list[Field]) -> int:
    """TxnId: the client joins ``highBits << 64 | lowBits`` of the two int64 halves."""
    mask = (1 << 64) - 1
    return (signed(first(fields, 1)) & mask) << 64 | signed(first(fields, 2)) & mask


def decode_txn_request(data: bytes) -> TxnRequest:
    """TxnRequest (commit, abort, state) and PingTxnRequest (lease in field 3)."""
    fields = decode(data)
    stream = _stream_info(_message(first(fields, 1)))
    txn_id = _txn_id(_message(first(fields, 2)))
    lease = first(fields, 3)
    return TxnRequest(stream, txn_id, signed(lease) if isinstance(lease, int) else 0)


# --- replies -------------------------------------------------------------------------------


def encode_status(status: int) -> bytes:
    """Every reply that is one enum (or bool) in field 1: the *Status messages, TxnState,
    ExistsResponse."""
    return encode([Field(1, VARINT, int(status))])


def _stream_info_fields(stream: StreamInfo) -> list[Field]:
    return [string(1, stream.scope), string(2, stream.stream)]


def _segment_id_fields(stream: StreamInfo, segment_id: int) -> list[Field]:
    return [message(1, _stream_info_fields(stream)), Field(2, VARINT, segment_id)]


def _range_fields(segment: SegmentRange) -> list[Field]:
    return [
        message(1, _segment_id_fields(segment.stream, segment.segment_id)),
        double(2, segment.min_key),
        double(3, segment.max_key),
    ]


def _token(number: int, token: str) -> Field:
    """A ContinuationToken, always present: the client fails a non-empty page without one."""
    return message(number, [string(1, token)])


def encode_scopes(scopes: Iterable[str], token: str) -> bytes:
    return encode([*(string(1, scope) for scope in scopes), _token(2, token)])


def encode_streams(page: StreamPage) -> bytes:
    streams = [message(1, _stream_info_fields(stream)) for stream in page.streams]
    return encode([*streams, _token(2, page.token), Field(3, VARINT, page.status)])


def encode_segment_ranges(segments: Iterable[SegmentRange]) -> bytes:
    """SegmentRanges, with an empty delegation token (the local Pravega has no auth)."""
    return encode([message(1, _range_fields(segment)) for segment in segments])


def encode_head_segments(segments: Iterable[HeadSegment]) -> bytes:
    """SegmentsAtTime."""
    return encode(
        [
            message(
                1,
                [
                    message(1, _segment_id_fields(head.segment.stream, head.segment.segment_id)),
                    Field(2, VARINT, head.offset),
                ],
            )
            for head in segments
        ]
    )


def encode_no_successors() -> bytes:
    """SuccessorResponse with no segments: what the client reads as "the stream is sealed",
    and the only answer while streams never scale."""
    return b""


def encode_node_uri(host: str, port: int) -> bytes:
    return encode([string(1, host), Field(2, VARINT, port)])


def encode_delegation_token(token: str) -> bytes:
    return encode([string(1, token)])


def encode_created_txn(created: CreatedTxn) -> bytes:
    mask = (1 << 64) - 1
    txn_id = [
        Field(1, VARINT, created.txn_id >> 64 & mask),
        Field(2, VARINT, created.txn_id & mask),
    ]
    ranges = [message(2, _range_fields(segment)) for segment in created.segments]
    return encode([message(1, txn_id), *ranges])


def encode_stream_config(config: StreamConfig) -> bytes:
    scaling = config.scaling
    fields = [
        message(1, _stream_info_fields(config.stream)),
        message(
            2,
            [
                Field(1, VARINT, scaling.scale_type),
                Field(2, VARINT, scaling.target_rate),
                Field(3, VARINT, scaling.scale_factor),
                Field(4, VARINT, scaling.min_num_segments),
            ],
        ),
    ]
    if config.retention is not None:
        retention = config.retention
        fields.append(
            message(
                3,
                [
                    Field(1, VARINT, retention.retention_type),
                    Field(2, VARINT, retention.retention_param),
                    Field(3, VARINT, retention.retention_max),
                ],
            )
        )
    if config.tags is not None:
        fields.append(message(4, [string(1, tag) for tag in config.tags]))
    return encode(fields)
