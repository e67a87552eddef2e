"""A RabbitMQ Streams producer: one publisher per partition stream, batches handed to the loop.

The producer loop's thread only appends: ``send`` stamps the payload's prefix
(:mod:`.carrier`), picks the partition (CRC-32 of the key like the RabbitMQ driver, round-robin
without one) and appends the message and its ``on_done`` to that partition's buffer. The
buffers go to the driver's event loop in one hand-over per ``poll``/``flush`` (or once 1,000
messages wait): no thread hop, coroutine or future per message. On the loop each batch becomes
publish frames (or sub-entries of ``subEntrySize`` messages, ``compression`` applied) written
in order by one writer task, each message (sub-entry) under a publishing id of the producer's
own; the broker's confirm frames call ``on_done(None)`` per message on the loop, an error
frame ``on_done(error)``.

At most ``maxUnconfirmedMessages`` are in flight: a send beyond it hands the buffers over and
waits for confirms. A lost connection fails every message in flight and every later one (no
recovery: the run reports them as send errors).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from time import monotonic, sleep, time_ns
from zlib import crc32

from rstream import CompressionType, schema
from rstream.client import Client
from rstream.compression import CompressionHelper
from rstream.utils import OnClosedErrorInfo

from loadgen.base.errors import DriverError
from loadgen.driver_api import ACK, KEY, VALUE, CallbackAcks, OnDone, PrefixedSend
from loadgen.driver_api.loop_thread import LoopThread
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer
from loadgen_drivers.rabbitmq_streams.carrier import stamped_short
from loadgen_drivers.rabbitmq_streams.config import Compression, Endpoint, StreamsConfig
from loadgen_drivers.rabbitmq_streams.connection import FRAME_MAX, KIND, Connections

log = logging.getLogger("loadgen.rabbitmq_streams")

HAND_OVER_AT = 1000
"""Buffered messages that go to the loop without waiting for the next poll."""
FRAME_ROOM = FRAME_MAX - 4096
"""Bytes of messages per publish frame (the frame's own fields take the rest)."""
MESSAGE_OVERHEAD = 12
"""A message's bytes in a publish frame beyond its data: publishing id and length."""
FULL_WINDOW_WAIT_S = 0.0005
FULL_WINDOW_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0
MAX_PUBLISHERS = 255
"""Publisher ids are one byte per connection."""
CODECS = {Compression.NONE: CompressionType.No, Compression.GZIP: CompressionType.Gzip}
WINDOW_STUCK = DriverError(KIND, f"no publisher confirm for {FULL_WINDOW_TIMEOUT_S:.0f} s")


@dataclass(eq=False)
class Publisher:
    """One partition stream's publisher. ``values``/``dones`` are the sending thread's buffer;
    the rest belongs to the loop."""

    stream: str
    client: Client | None = None
    publisher_id: int = 0
    next_id: int = 1
    outstanding: dict[int, OnDone | tuple[OnDone, ...]] = field(default_factory=dict)
    values: list[bytes] = field(default_factory=list)
    dones: list[OnDone] = field(default_factory=list)


class StreamProducer(CallbackAcks):
    def __init__(
        self, loop: LoopThread, context: ssl.SSLContext | None, config: StreamsConfig
    ) -> None:
        super().__init__()
        self._loop = loop
        self._connections = Connections(context, "loadgen-producer", self.on_lost)
        self._window = config.max_unconfirmed
        self._sub_entry_size = config.sub_entry_size
        self._codec = CODECS[config.compression]
        self._publishers: list[Publisher] = []
        self._round_robin = 0
        self._buffered = 0
        self._prefixer = Prefixer()
        self._frames: deque[tuple[Client, schema.Frame]] = deque()
        self._wake: asyncio.Event | None = None
        self._writer: asyncio.Task[None] | None = None
        self._closing = False
        self.failure: DriverError | None = None

    # -- set-up, on the loop -------------------------------------------------------------------
    async def start(self, leaders: list[tuple[str, Endpoint]]) -> None:
        """Declare a publisher on each ``(stream, leader)``, partition by partition."""
        by_client: dict[int, dict[int, Publisher]] = {}
        for stream, leader in leaders:
            client = await self._connections.to(leader)
            publishers = by_client.get(id(client))
            if publishers is None:
                publishers = by_client[id(client)] = {}
                confirmed = self._confirmed_sub_entries if self._sub_entry_size > 1 else None
                client.add_handler(
                    schema.PublishConfirm,
                    partial(confirmed or self._confirmed, publishers),
                    name="loadgen",
                )
                client.add_handler(
                    schema.PublishError, partial(self._refused, publishers), name="loadgen"
                )
            if len(publishers) >= MAX_PUBLISHERS:
                raise DriverError(
                    KIND, f"more than {MAX_PUBLISHERS} partitions on {leader.address}"
                )
            publisher = Publisher(stream, client, len(publishers))
            await client.declare_publisher(stream, None, publisher.publisher_id)
            client.add_stream(stream)  # so that losing the connection is reported
            publishers[publisher.publisher_id] = publisher
            self._publishers.append(publisher)
        self._wake = asyncio.Event()
        self._writer = asyncio.get_running_loop().create_task(self._write())

    # -- the engine's side ----------------------------------------------------------------------
    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        if len(payload) >= PREFIX_BYTES:
            value = self._prefixer.stamped(payload, time_ns(), message_id, intended_ns)
        else:
            value = stamped_short(payload, time_ns(), message_id, intended_ns)
        self._enqueue(value, key, on_done)

    def _enqueue(self, value: bytes, key: bytes | None, on_done: OnDone) -> None:
        if self.failure is not None:
            on_done(self.failure)
            return
        if self.sent - self.completed >= self._window and not self._wait_for_room():
            on_done(self.failure or WINDOW_STUCK)
            return
        publishers = self._publishers
        count = len(publishers)
        if count == 1:
            publisher = publishers[0]
        elif key is None:
            publisher = publishers[self._round_robin % count]
            self._round_robin += 1
        else:
            publisher = publishers[crc32(key) % count]
        publisher.values.append(value)
        publisher.dones.append(on_done)
        self.sent += 1
        self._buffered += 1
        if self._buffered >= HAND_OVER_AT:
            self._hand_over()

    def prefixed_send(self) -> PrefixedSend:
        """The producer loop stamps each payload's prefix and appends it here."""
        return PrefixedSend(self._enqueue, (VALUE, KEY, ACK))

    def _wait_for_room(self) -> bool:
        self._hand_over()
        deadline = monotonic() + FULL_WINDOW_TIMEOUT_S
        while self.sent - self.completed >= self._window:
            if self.failure is not None or monotonic() > deadline:
                return False
            sleep(FULL_WINDOW_WAIT_S)
        return True

    def _hand_over(self) -> None:
        if not self._buffered:
            return
        batches = []
        for publisher in self._publishers:
            if publisher.values:
                batches.append((publisher, publisher.values, publisher.dones))
                publisher.values, publisher.dones = [], []
        self._buffered = 0
        self._loop.call(self._publish, batches)

    def poll(self, timeout_s: float = 0.0) -> None:
        self._hand_over()
        super().poll(timeout_s)

    def flush(self, timeout_s: float) -> int:
        self._hand_over()
        return super().flush(timeout_s)

    def close(self) -> None:
        if self._closing:
            return
        self.flush(CLOSE_TIMEOUT_S)
        self._closing = True
        try:
            self._loop.run(self._close(), CLOSE_TIMEOUT_S)
        except (TimeoutError, RuntimeError) as error:  # RuntimeError: the loop already stopped
            log.warning("producer did not close cleanly: %r", error)

    # -- on the loop ------------------------------------------------------------------------------
    def _publish(self, batches: list[tuple[Publisher, list[bytes], list[OnDone]]]) -> None:
        for publisher, values, dones in batches:
            if self.failure is not None:
                self._fail_all(dones, self.failure)
            elif self._sub_entry_size > 1:
                self._queue_sub_entries(publisher, values, dones)
            else:
                self._queue_messages(publisher, values, dones)
        self._wake.set()

    def _queue_messages(
        self, publisher: Publisher, values: list[bytes], dones: list[OnDone]
    ) -> None:
        first = publisher.next_id
        publisher.next_id = first + len(values)
        publisher.outstanding.update(zip(range(first, publisher.next_id), dones, strict=True))
        messages: list[schema.Message] = []
        size = 0
        for publishing_id, value in enumerate(values, first):
            size += len(value) + MESSAGE_OVERHEAD
            if size > FRAME_ROOM and messages:
                self._frames.append((publisher.client, self._frame(publisher, messages)))
                messages, size = [], len(value) + MESSAGE_OVERHEAD
            messages.append(schema.Message(publishing_id, None, value))
        self._frames.append((publisher.client, self._frame(publisher, messages)))

    @staticmethod
    def _frame(publisher: Publisher, messages: list[schema.Message]) -> schema.Publish:
        return schema.Publish(publisher_id=publisher.publisher_id, messages=messages)

    def _queue_sub_entries(
        self, publisher: Publisher, values: list[bytes], dones: list[OnDone]
    ) -> None:
        step = self._sub_entry_size
        for start in range(0, len(values), step):
            codec = CompressionHelper.compress(values[start : start + step], self._codec)
            publishing_id = publisher.next_id
            publisher.next_id += 1
            publisher.outstanding[publishing_id] = tuple(dones[start : start + step])
            frame = schema.PublishSubBatching(
                publisher_id=publisher.publisher_id,
                number_of_root_messages=1,
                publishing_id=publishing_id,
                compress_type=0x80 | codec.compression_type() << 4,
                subbatching_message_count=codec.messages_count(),
                uncompressed_data_size=codec.uncompressed_size(),
                compressed_data_size=codec.compressed_size(),
                messages=codec.data(),
            )
            self._frames.append((publisher.client, frame))

    async def _write(self) -> None:
        """The one writer: frames leave in the order they were queued."""
        frames, wake = self._frames, self._wake
        while True:
            while frames:
                client, frame = frames.popleft()
                if isinstance(frame, schema.Publish):
                    await client.send_publish_frame(frame)
                else:
                    await client.send_frame(frame)
            wake.clear()
            await wake.wait()

    def _confirmed(self, publishers: dict[int, Publisher], frame: schema.PublishConfirm) -> None:
        publisher = publishers.get(frame.publisher_id)
        if publisher is None:
            return
        pop = publisher.outstanding.pop
        confirmed = 0
        for publishing_id in frame.publishing_ids:
            on_done = pop(publishing_id, None)
            if on_done is not None:
                on_done(None)
                confirmed += 1
        self.completed += confirmed

    def _confirmed_sub_entries(
        self, publishers: dict[int, Publisher], frame: schema.PublishConfirm
    ) -> None:
        publisher = publishers.get(frame.publisher_id)
        if publisher is None:
            return
        pop = publisher.outstanding.pop
        for publishing_id in frame.publishing_ids:
            dones = pop(publishing_id, ())
            for on_done in dones:
                on_done(None)
            self.completed += len(dones)

    def _refused(self, publishers: dict[int, Publisher], frame: schema.PublishError) -> None:
        publisher = publishers.get(frame.publisher_id)
        if publisher is None:
            return
        for error in frame.errors:
            dones = publisher.outstanding.pop(error.publishing_id, ())
            failure = DriverError(
                KIND, f"{publisher.stream}: publish refused, response code {error.response_code}"
            )
            self._fail_all(dones if isinstance(dones, tuple) else (dones,), failure)

    def on_lost(self, info: OnClosedErrorInfo) -> None:
        """The connection went away: what is in flight and what comes later fails."""
        if self._closing:
            return
        failure = DriverError(KIND, f"connection lost ({info.reason}) on {', '.join(info.streams)}")
        if self.failure is None:
            log.warning("producer: %s", failure)
            self.failure = failure
        for publisher in self._publishers:
            outstanding, publisher.outstanding = publisher.outstanding, {}
            for dones in outstanding.values():
                self._fail_all(dones if isinstance(dones, tuple) else (dones,), failure)

    def _fail_all(self, dones, failure: DriverError) -> None:
        for on_done in dones:
            on_done(failure)
        self.completed += len(dones)

    async def _close(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
        for publisher in self._publishers:
            client = publisher.client
            if client is not None and client.is_connection_alive():
                try:
                    await client.delete_publisher(publisher.publisher_id)
                except Exception as error:  # the broker may be gone: closing must not raise
                    log.debug("deleting publisher on %s: %r", publisher.stream, error)
        await self._connections.close()
