"""A Redis producer: ``XADD`` pipelined, a batch per round trip.

``send`` (or, compiled, the producer loop itself through :meth:`RedisProducer.prefixed_send`)
appends a message's frame (:mod:`.frames`) to the batch; at ``pipelineDepth`` messages, and
whenever the loop polls or flushes, the batch goes out in one write and the producer reads
its replies in order, calling each message's ``on_done`` as its reply is parsed: one blocking
round trip per batch, none per message, and nothing in flight between two batches. An error
reply (``OOM``, ``WRONGTYPE``) fails its message only; a broken connection fails the batch,
and the next batch connects again.

The stamp travels in the payload's first 32 bytes (:mod:`loadgen.driver_api.stamp`), or in an
``lg-stamp`` field for a shorter payload or with ``stampIn: field``.
"""

from __future__ import annotations

import logging
import time
from time import time_ns
from zlib import crc32

import redis

from loadgen.base.errors import DriverError
from loadgen.driver_api import ACK, KEY, STAMP, VALUE, OnDone, PrefixedSend
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer
from loadgen_drivers.redis.config import RedisConfig, StampCarrier, Trim
from loadgen_drivers.redis.frames import (
    AFTER_STAMP,
    CRLF,
    length_line,
    trim_arguments,
    xadd_head,
)

log = logging.getLogger("loadgen.redis")

pack_stamp = STAMP.pack
BROKEN = (redis.ConnectionError, redis.TimeoutError, OSError)


class RedisProducer:
    def __init__(
        self, connection: redis.Connection, keys: list[str], config: RedisConfig, release
    ) -> None:
        """``release`` hands the connection back to the pool at :meth:`close`."""
        self._connection = connection
        self._release = release
        trim = trim_arguments(config.max_len, config.trim is Trim.EXACT)
        self._heads = [xadd_head(key, trim, stamp_field=False) for key in keys]
        self._stamped_heads = [xadd_head(key, trim, stamp_field=True) for key in keys]
        self._partitions = len(keys)
        self._next = 0
        self._depth = config.pipeline_depth
        self._stamp_in_field = config.stamp_in is StampCarrier.FIELD
        self._stamped = Prefixer().stamped
        self._size = -1
        self._size_line = b""
        self._frames: list[bytes] = []
        self._acks: list[OnDone] = []
        self._closed = False

    def _partition(self, key: bytes | None) -> int:
        if key is None:
            index = self._next
            self._next = (index + 1) % self._partitions
            return index
        return crc32(key) % self._partitions

    def _add(self, value: bytes, key: bytes | None, on_done: OnDone) -> None:
        """One message whose payload carries the stamp (the loop's call, and ``send``'s)."""
        size = len(value)
        if size != self._size:
            self._size, self._size_line = size, length_line(size)
        self._frames += (self._heads[self._partition(key)], self._size_line, value, CRLF)
        self._acks.append(on_done)
        if len(self._acks) >= self._depth:
            self._write()

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        if not self._stamp_in_field and len(payload) >= PREFIX_BYTES:
            self._add(self._stamped(payload, time_ns(), message_id, intended_ns), key, on_done)
            return
        stamp = pack_stamp(time_ns(), message_id, intended_ns)
        head = self._stamped_heads[self._partition(key)]
        self._frames += (head, stamp, AFTER_STAMP, length_line(len(payload)), payload, CRLF)
        self._acks.append(on_done)
        if len(self._acks) >= self._depth:
            self._write()

    def prefixed_send(self) -> PrefixedSend | None:
        """The loop stamps payloads and calls :meth:`_add` itself (not with ``stampIn: field``)."""
        if self._stamp_in_field:
            return None
        return PrefixedSend(self._add, (VALUE, KEY, ACK))

    def _write(self) -> None:
        """The batch in one write, then its replies in order, each message's ``on_done`` as its
        reply is read."""
        acks = self._acks
        if not acks:
            return
        frames = self._frames
        self._frames, self._acks = [], []
        connection = self._connection
        read = connection.read_response
        done = 0
        try:
            connection.send_packed_command([b"".join(frames)], check_health=False)
            for on_done in acks:
                try:
                    read()
                except redis.ResponseError as error:  # this message only
                    done += 1
                    on_done(DriverError("redis", f"XADD: {error}"))
                    continue
                done += 1
                on_done(None)
        except BROKEN as error:
            connection.disconnect()  # the next batch connects again
            failure = DriverError("redis", f"connection lost: {error}")
            for on_done in acks[done:]:
                on_done(failure)

    def poll(self, timeout_s: float = 0.0) -> None:
        self._write()
        if timeout_s > 0:
            time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        self._write()
        return 0

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._write()
        self._release(self._connection)
