"""The local Pravega's controller: Pravega's ``ControllerService`` over gRPC (plaintext HTTP/2),
answering the RPCs the Rust client (``pravega_client``) calls from :class:`StreamMetadata`.

Messages are (de)serialized by :mod:`controller_messages` through grpc's generic handlers, so
no generated code is needed. Each RPC's name is logged as ``served <rpcName>`` the first time it
is answered: the conformance tests read the log to know the client really called it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from loadgen_drivers.pravega.local import controller_messages as wire
from loadgen_drivers.pravega.local.stream_metadata import NotFound, StreamMetadata

Rpc = tuple[Callable[[bytes], Any], Callable[[Any], Any], Callable[[Any], bytes]]
"""(request decoder, answer, reply encoder) of one RPC."""


def _rpcs(metadata: StreamMetadata, segment_store: tuple[str, int]) -> dict[str, Rpc]:
    """Every RPC the client calls, by its name in Controller.proto. The RPCs left out
    (scaling, truncation, key-value tables, subscribers, the Java client's reader-group RPCs)
    fail UNIMPLEMENTED, which the client does not retry."""
    m = metadata
    status = wire.encode_status

    def successors(_segment: wire.SegmentId) -> bytes:
        """None, for any segment: streams never scale, so a segment ends only when its stream
        is sealed or deleted. For a deleted stream Pravega fails NOT_FOUND, on which the Rust
        writer panics in its reactor; "sealed" ends its writers and readers cleanly instead."""
        return wire.encode_no_successors()

    def endpoint(_segment: wire.SegmentId) -> bytes:
        """Every segment lives on the one segment store."""
        return wire.encode_node_uri(*segment_store)

    def raw(reply: bytes) -> bytes:
        return reply

    return {
        "createScope": (wire.decode_scope, m.create_scope, status),
        "checkScopeExists": (wire.decode_scope, m.scope_exists, status),
        "listScopes": (
            wire.decode_scopes_request,
            lambda r: wire.encode_scopes(*m.list_scopes(r.token)),
            raw,
        ),
        "deleteScope": (wire.decode_scope, m.delete_scope, status),
        "createStream": (wire.decode_stream_config, m.create_stream, status),
        "checkStreamExists": (wire.decode_stream_info, m.stream_exists, status),
        "getStreamConfiguration": (
            wire.decode_stream_info,
            m.stream_config,
            wire.encode_stream_config,
        ),
        "updateStream": (wire.decode_stream_config, m.update_stream, status),
        "sealStream": (wire.decode_stream_info, m.seal_stream, status),
        "deleteStream": (wire.decode_stream_info, m.delete_stream, status),
        "listStreamsInScope": (
            wire.decode_streams_request,
            lambda r: m.list_streams(r.scope, r.token),
            wire.encode_streams,
        ),
        "getCurrentSegments": (
            wire.decode_stream_info,
            m.current_segments,
            wire.encode_segment_ranges,
        ),
        "getEpochSegments": (
            wire.decode_epoch_request,
            lambda r: m.epoch_segments(r.stream, r.epoch),
            wire.encode_segment_ranges,
        ),
        "getSegments": (wire.decode_segments_request, m.head_segments, wire.encode_head_segments),
        "getSegmentsImmediatelyFollowing": (wire.decode_segment_id, successors, raw),
        "getURI": (wire.decode_segment_id, endpoint, raw),
        "getDelegationToken": (
            wire.decode_stream_info,
            lambda _stream: "",
            wire.encode_delegation_token,
        ),
        "createTransaction": (
            wire.decode_create_txn,
            lambda r: m.create_transaction(r.stream, r.lease_ms),
            wire.encode_created_txn,
        ),
        "pingTransaction": (
            wire.decode_txn_request,
            lambda r: m.ping_transaction(r.stream, r.txn_id, r.lease_ms),
            status,
        ),
        "commitTransaction": (
            wire.decode_txn_request,
            lambda r: m.commit_transaction(r.stream, r.txn_id),
            status,
        ),
        "abortTransaction": (
            wire.decode_txn_request,
            lambda r: m.abort_transaction(r.stream, r.txn_id),
            status,
        ),
        "checkTransactionState": (
            wire.decode_txn_request,
            lambda r: m.transaction_state(r.stream, r.txn_id),
            status,
        ),
    }


def _handler(name: str, answer: Callable[[Any], Any], served: set[str]) -> Callable:
    """The gRPC behaviour of one RPC: logs its first call, maps NotFound to NOT_FOUND."""

    async def behaviour(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if name not in served:
            served.add(name)
            print(f"served {name}", flush=True)
        try:
            return answer(request)
        except NotFound as error:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(error))

    return behaviour


async def serve_controller(
    metadata: StreamMetadata, host: str, port: int, segment_store: tuple[str, int]
) -> grpc.aio.Server:
    """Starts the controller on ``host``:``port``, sending clients to ``segment_store`` for
    every segment; the caller stops the returned server."""
    served: set[str] = set()
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _handler(name, answer, served),
            request_deserializer=decode,
            response_serializer=encode,
        )
        for name, (decode, answer, encode) in _rpcs(metadata, segment_store).items()
    }
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(wire.SERVICE, handlers),))
    server.add_insecure_port(f"{host}:{port}")
    await server.start()
    return server
