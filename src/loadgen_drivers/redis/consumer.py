"""A Redis consumer: one thread, one connection, ``XREADGROUP`` over every stream key of its
topic, ``XACK`` per read batch.

The thread writes the previous batch's ``XACK``s (one per stream key it read from) and the
next ``XREADGROUP GROUP <subscription> <consumer> COUNT readCount BLOCK blockMs STREAMS k…
> …`` in one write, so a batch costs one round trip, acks included. Consumers of one
subscription share its group and so split the entries, as OMB's do. An entry's partition is
the index of its stream key. The stamp comes from the payload's prefix (handed to the
engine's recorder a batch at a time where it has one) or from an ``lg-stamp`` field; an entry
with neither is skipped (counted, logged once).

``pause`` parks the thread after its current read (at most ``blockMs``) with every entry it
read acknowledged, so a paused consumer takes nothing in; :meth:`RedisConsumer.unread` asks
``XINFO GROUPS`` then.
"""

from __future__ import annotations

import logging
import struct
import threading
from time import monotonic, sleep

import redis

from loadgen.driver_api import STAMP, ForeignMessages, OnMessage, prefixed_deliveries
from loadgen.driver_api.stamp import read_prefix
from loadgen_drivers.redis.frames import PAYLOAD_FIELD, STAMP_FIELD

log = logging.getLogger("loadgen.redis")

PARK_TIMEOUT_S = 5.0
"""Beyond one ``BLOCK``: how long ``pause``, ``unread`` and ``close`` wait for the thread."""
RETRY_AFTER_S = 0.5
"""After a failed read: how long before the thread connects and reads again."""
COUNT_PAGE = 10_000
BROKEN = (redis.ConnectionError, redis.TimeoutError, OSError)

unpack_stamp = STAMP.unpack


class RedisConsumer:
    def __init__(
        self,
        connection: redis.Connection,
        keys: list[str],
        group: str,
        name: str,
        read_count: int,
        block_ms: int,
        on_message: OnMessage,
        release,
    ) -> None:
        """``release`` hands the connection back to the pool once the thread has ended."""
        self._connection = connection
        self._keys = keys
        self._group = group
        self._partition_of = {key.encode(): index for index, key in enumerate(keys)}
        self._read = connection.pack_command(
            "XREADGROUP", "GROUP", group, name, "COUNT", read_count, "BLOCK", block_ms,
            "STREAMS", *keys, *[">"] * len(keys),
        )  # fmt: skip
        self._wait_s = block_ms / 1000 + PARK_TIMEOUT_S
        self._on_message = on_message
        recorder = prefixed_deliveries(on_message)
        self._on_prefixed_many = recorder.on_prefixed_many if recorder is not None else None
        self.foreign = ForeignMessages(
            log, f"loadgen's payload prefix or a well-formed {STAMP_FIELD.decode()} field"
        )
        self._release = release
        self._to_ack: dict[bytes, list[bytes]] = {}
        self._paused = False
        self._closing = False
        self._parked = threading.Event()
        self._wake = threading.Condition()
        self._io = threading.Lock()
        """Held by the thread for each round trip, by :meth:`unread` for its questions."""
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name=f"loadgen-redis-{name}", daemon=True)
        self._thread.start()

    # -- the thread ---------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                with self._wake:
                    while self._paused and not self._closing:
                        self._park()
                        self._wake.wait()
                    if self._closing:
                        break
                    self._parked.clear()
                self._read_once()
            self._park()
        finally:
            self._release(self._connection)

    def _park(self) -> None:
        """Acknowledge what was read, then say the thread is idle."""
        if self._to_ack:
            with self._io:
                try:
                    self._round_trip(read=False)
                except BROKEN as error:
                    self._on_error(error)
        self._parked.set()

    def _read_once(self) -> None:
        try:
            with self._io:
                reply = self._round_trip(read=True)
        except BROKEN as error:
            self._on_error(error)
            sleep(RETRY_AFTER_S)  # the next read connects again
            return
        for stream, entries in reply or ():
            self._deliver(self._partition_of.get(stream, -1), entries)
            self._to_ack[stream] = [entry[0] for entry in entries]

    def _round_trip(self, *, read: bool) -> list | None:
        """The pending ``XACK``s and (``read``) one ``XREADGROUP`` in one write; its entries."""
        connection = self._connection
        acks, self._to_ack = self._to_ack, {}
        commands = [("XACK", key, self._group, *ids) for key, ids in acks.items()]
        packed = connection.pack_commands(commands) if commands else []
        if read:
            packed += self._read
        if not packed:
            return None
        try:
            connection.send_packed_command([b"".join(packed)], check_health=False)
        except BROKEN:  # not sent: acknowledge them on the next round trip
            self._to_ack = acks | self._to_ack
            raise
        for _ in commands:
            try:
                connection.read_response()
            except redis.ResponseError as error:  # a group destroyed under us, say
                self._on_error(error)
        return connection.read_response() if read else None

    def _on_error(self, error: Exception) -> None:
        self.errors += 1
        if self.errors in (1, 10, 100, 1000):
            log.warning("consumer of %s: error #%d: %s", self._keys[0], self.errors, error)

    # -- deliveries ---------------------------------------------------------------------------
    def _deliver(self, partition: int, entries: list) -> None:
        """Hand the payloads with the stamp prefix to the recorder a run at a time; read the
        others one by one."""
        many = self._on_prefixed_many
        if many is None:
            for entry in entries:
                self._one(entry, partition)
            return
        payloads = [fields[-1] if fields else b"" for _, fields in entries]
        start, end = 0, len(payloads)
        while start < end:
            start = many(payloads, start, partition)
            if start < end:
                self._one(entries[start], partition)
                start += 1

    def _one(self, entry: list, partition: int) -> None:
        fields = entry[1] or []
        named = dict(zip(fields[::2], fields[1::2], strict=False))
        payload = named.get(PAYLOAD_FIELD, b"")
        stamp = named.get(STAMP_FIELD)
        try:
            sent_ns, message_id, intended_ns = (
                unpack_stamp(stamp) if stamp is not None else read_prefix(payload)
            )
        except (TypeError, struct.error):  # no stamp at all, or a malformed field
            self.foreign()
            return
        self._on_message(payload, sent_ns, message_id, intended_ns, partition)

    # -- the engine's side --------------------------------------------------------------------
    def pause(self) -> None:
        if not self._pause(self._wait_s):
            log.warning("the consumer did not pause within %.1f s", self._wait_s)

    def _pause(self, wait_s: float) -> bool:
        """Ask the thread to park; whether it did within ``wait_s``."""
        with self._wake:
            self._paused = True
        return self._parked.wait(wait_s)

    def resume(self) -> None:
        with self._wake:
            self._paused = False
            self._wake.notify()

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """Per stream key, what the group has yet to read (``XINFO GROUPS``: Redis 7's ``lag``)
        plus what it read and has not acknowledged (``pending``), asked once the consumer is
        paused and has acknowledged all it read: every entry is then received or counted."""
        deadline = monotonic() + timeout_s
        if not self._pause(timeout_s) or not self._io.acquire(
            timeout=max(0.0, deadline - monotonic())
        ):
            return None
        try:
            return {key: self._unread_of(key, deadline) for key in self._keys}
        except (BROKEN, TimeoutError, LookupError) as error:
            log.debug("reading the backlog failed: %s", error)
            return None
        finally:
            self._io.release()

    def _unread_of(self, key: str, deadline: float) -> int:
        connection = self._connection
        connection.send_command("XINFO", "GROUPS", key)
        for group in connection.read_response():
            info = dict(zip(group[::2], group[1::2], strict=False))
            if info[b"name"] == self._group.encode():
                lag = info.get(b"lag")
                if lag is None:  # deleted entries make Redis unsure: count them
                    lag = self._count_after(key, info[b"last-delivered-id"], deadline)
                return lag + info[b"pending"]
        raise LookupError(f"no group {self._group} on {key}")

    def _count_after(self, key: str, last_id: bytes, deadline: float) -> int:
        """Entries of ``key`` after ``last_id``, counted page by page until ``deadline``."""
        connection, counted, start = self._connection, 0, b"(" + last_id
        while True:
            if monotonic() > deadline:
                raise TimeoutError("counting the entries left took too long")
            connection.send_command("XRANGE", key, start, "+", "COUNT", COUNT_PAGE)
            page = connection.read_response()
            counted += len(page)
            if len(page) < COUNT_PAGE:
                return counted
            start = b"(" + page[-1][0]

    def close(self) -> None:
        with self._wake:
            self._closing = True
            self._wake.notify()
        self._thread.join(self._wait_s)
        if self._thread.is_alive():
            log.warning("the consumer of %s did not stop in %.1f s", self._keys[0], self._wait_s)
