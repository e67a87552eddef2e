"""A subscription's reader: one stream-protocol subscription per partition stream, shared by the
subscription's consumers in this process.

A stream consumer reads a whole stream; nothing on the broker (before RabbitMQ 3.11's single
active consumer) splits one among several. So the consumers of one subscription that a driver
creates form a :class:`SubscriptionReader`: each partition stream is subscribed once, and its
chunks go to consumer ``partition % consumers`` (a consumer that joins later takes its share of
the chunks from then on). Every message is read once per subscription, whatever the count of
consumers.

Where reading starts: the offset stored on the server under the subscription's name (the
consumer reference) when there is one, else ``next`` (what is published from now on). The
reader stores its offset every ``offsetStoreIntervalMs`` and when it closes.

Pausing is credit: each chunk delivered grants one more credit, so a paused reader holds the
chunks that arrive (``consumerCredit`` at most, then the broker sends no more) without
delivering them or granting credit; resuming delivers the held chunks and grants their credit,
and the broker goes on from there. So a paused subscription takes nothing in and catches up
from exactly where it stopped, even one paused before its first chunk (its ``next`` position
is the broker's).

Delivery: each chunk's messages go to the engine's recorder in one call
(:func:`loadgen.driver_api.prefixed_deliveries`); payloads it declines (a short payload's own
prefix, a message loadgen did not send) are read here.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from rstream import OffsetType, exceptions, schema
from rstream.client import Client
from rstream.utils import OnClosedErrorInfo

from loadgen.base.errors import DriverError
from loadgen.driver_api import (
    ForeignMessages,
    OnMessage,
    PrefixedDeliveries,
    prefixed_deliveries,
)
from loadgen.driver_api.loop_thread import LoopThread
from loadgen.driver_api.stamp import read_prefix
from loadgen_drivers.rabbitmq_streams.carrier import read_short
from loadgen_drivers.rabbitmq_streams.config import Endpoint
from loadgen_drivers.rabbitmq_streams.connection import KIND, Connections

log = logging.getLogger("loadgen.rabbitmq_streams")

SWITCH_TIMEOUT_S = 10.0
LAST_CHUNK_WAIT_S = 1.0
"""How long the backlog count waits for a stream's last chunk: none by then, the stream is
empty."""
HANDLER_ID = 0
"""The name of the reader's one chunk handler per connection: rstream queues each chunk once
per handler, under the handler's name read as a number."""


@dataclass(eq=False)
class Partition:
    index: int
    stream: str
    leader: Endpoint
    client: Client | None = None
    subscription_id: int = -1
    next_offset: int = -1
    """The offset of the next message to deliver; -1 before the first chunk under ``next``."""
    stored: int = -1
    """The offset last stored on the server."""
    held: list[schema.Deliver] = field(default_factory=list)
    """Chunks that arrived while the reader was paused: neither delivered nor credited."""


@dataclass(eq=False)
class Member:
    """One consumer's way into the engine."""

    on_message: OnMessage
    recorder: PrefixedDeliveries | None
    paused: bool = False


class SubscriptionReader:
    """Everything here runs on the driver's loop, except the methods the consumers call."""

    def __init__(
        self,
        loop: LoopThread,
        context: ssl.SSLContext | None,
        subscription: str,
        leaders: list[tuple[str, Endpoint]],
        credit: int,
        store_interval_s: float,
        on_empty: Callable[[SubscriptionReader], None],
    ) -> None:
        self._loop = loop
        self._subscription = subscription
        self._partitions = [
            Partition(index, stream, leader) for index, (stream, leader) in enumerate(leaders)
        ]
        self._by_subscription: dict[tuple[int, int], Partition | asyncio.Future[int]] = {}
        """What each ``(connection, subscription id)`` delivers to."""
        self._credit = credit
        self._store_interval_s = store_interval_s
        self._on_empty = on_empty
        self._connections = Connections(context, f"loadgen-{subscription}", self._lost)
        self._members: list[Member] = []
        self._paused = False
        self._storing: asyncio.Task[None] | None = None
        self._next_id: dict[int, int] = {}
        self._handled: set[int] = set()
        self.foreign = ForeignMessages(log, "loadgen's stamp in the payload's first 32 bytes")
        self.failure: DriverError | None = None

    # -- members, from the engine's threads ------------------------------------------------------
    def join(self, on_message: OnMessage) -> StreamConsumer:
        member = Member(on_message, prefixed_deliveries(on_message))
        self._loop.run(self._join(member), SWITCH_TIMEOUT_S)
        return StreamConsumer(self, member)

    async def _join(self, member: Member) -> None:
        self._members.append(member)
        if len(self._members) == 1:
            for partition in self._partitions:
                partition.client = await self._connections.to(partition.leader)
                partition.client.add_stream(partition.stream)
                partition.next_offset = await self._stored_offset(partition)
            for partition in self._partitions:
                await self._subscribe(partition)
            self._storing = asyncio.get_running_loop().create_task(self._store_periodically())

    async def _stored_offset(self, partition: Partition) -> int:
        """The next offset after the one stored under the subscription's name; -1: none."""
        try:
            stored = await partition.client.query_offset(partition.stream, self._subscription)
        except exceptions.OffsetNotFound:
            return -1
        partition.stored = stored
        return stored + 1

    def switch(self, member: Member, *, paused: bool) -> None:
        self._loop.run(self._switch(member, paused), SWITCH_TIMEOUT_S)

    async def _switch(self, member: Member, paused: bool) -> None:
        """The partitions are read while any member is not paused."""
        member.paused = paused
        was_paused, self._paused = self._paused, all(m.paused for m in self._members)
        if was_paused and not self._paused:
            for partition in self._partitions:
                held, partition.held = partition.held, []
                for frame in held:
                    await self._take(partition, frame)

    def leave(self, member: Member) -> None:
        self._loop.run(self._leave(member), SWITCH_TIMEOUT_S)

    async def _leave(self, member: Member) -> None:
        self._members.remove(member)
        if self._members:
            return
        if self._storing is not None:
            self._storing.cancel()
        if self.failure is None:
            await self._unsubscribe_all()
            await self._store_offsets()
        await self._connections.close()
        self._on_empty(self)

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        try:
            return self._loop.run(self._count_unread(), timeout_s)
        except (TimeoutError, DriverError, OSError) as error:
            log.warning("backlog of %s not counted: %r", self._subscription, error)
            return None

    # -- subscriptions -----------------------------------------------------------------------
    async def _subscribe(self, partition: Partition) -> None:
        client = partition.client
        subscription_id = self._new_subscription_id(client)
        if partition.next_offset < 0:
            spec = schema.OffsetSpec.from_params(OffsetType.NEXT, None)
        else:
            spec = schema.OffsetSpec.from_params(OffsetType.OFFSET, partition.next_offset)
        await self._handle_deliveries(client)
        self._by_subscription[(id(client), subscription_id)] = partition
        partition.subscription_id = subscription_id
        await client.subscribe(partition.stream, subscription_id, spec, self._credit)

    def _new_subscription_id(self, client: Client) -> int:
        """Subscription ids are one byte per connection, never reused while a chunk for an old
        one may still be on its way."""
        taken = {sid for (key, sid) in self._by_subscription if key == id(client)}
        start = self._next_id.get(id(client), 0)
        for step in range(256):
            candidate = (start + step) % 256
            if candidate not in taken:
                self._next_id[id(client)] = candidate + 1
                return candidate
        raise DriverError(KIND, "more than 256 subscriptions on one connection")

    async def _handle_deliveries(self, client: Client) -> None:
        if id(client) not in self._handled:
            self._handled.add(id(client))
            handler = partial(self._on_chunk, client)
            client.add_handler(schema.Deliver, handler, name=str(HANDLER_ID))
            await client.run_queue_listener_task(HANDLER_ID, handler)

    async def _unsubscribe_all(self) -> None:
        for partition in self._partitions:
            key = (id(partition.client), partition.subscription_id)
            if not isinstance(self._by_subscription.pop(key, None), Partition):
                continue
            try:
                await partition.client.unsubscribe(partition.subscription_id)
            except exceptions.ServerError as error:
                log.debug("unsubscribing from %s: %r", partition.stream, error)

    # -- delivery, on the loop -------------------------------------------------------------------
    async def _on_chunk(self, client: Client, frame: schema.Deliver) -> None:
        target = self._by_subscription.get((id(client), frame.subscription_id))
        if target is None:  # a chunk for a subscription already cancelled
            return
        first = frame.chunk_first_offset
        if isinstance(target, asyncio.Future):  # a backlog count's look at the last chunk
            if not target.done():
                target.set_result(first + frame.num_records)
            return
        if self._paused:
            target.held.append(frame)
        else:
            await self._take(target, frame)

    async def _take(self, partition: Partition, frame: schema.Deliver) -> None:
        """Deliver a chunk's messages from the reader's position on, and credit one more."""
        await partition.client.credit(frame.subscription_id, 1)
        messages = frame.get_messages()
        first = frame.chunk_first_offset
        start = max(0, partition.next_offset - first) if partition.next_offset >= 0 else 0
        partition.next_offset = first + frame.num_records
        if start < len(messages) and self._members:
            self._deliver(messages, start, partition.index)

    def _deliver(self, messages: list[bytes], start: int, partition: int) -> None:
        member = self._members[partition % len(self._members)]
        recorder, on_message = member.recorder, member.on_message
        end = len(messages)
        index = start
        while index < end:
            if recorder is not None:
                index = recorder.on_prefixed_many(messages, index, partition)
                if index >= end:
                    return
            self._read_one(messages[index], on_message, partition)
            index += 1

    def _read_one(self, data: bytes, on_message: OnMessage, partition: int) -> None:
        stamp = read_prefix(data)
        if stamp is not None:
            on_message(data, *stamp, partition)
            return
        short = read_short(data)
        if short is None:
            self.foreign()
            return
        (sent_ns, message_id, intended_ns), payload = short
        on_message(payload, sent_ns, message_id, intended_ns, partition)

    # -- offsets --------------------------------------------------------------------------------
    async def _store_periodically(self) -> None:
        while True:
            await asyncio.sleep(self._store_interval_s)
            await self._store_offsets()

    async def _store_offsets(self) -> None:
        for partition in self._partitions:
            last = partition.next_offset - 1
            client = partition.client
            if last > partition.stored and client is not None and client.is_connection_alive():
                await client.store_offset(partition.stream, self._subscription, last)
                partition.stored = last

    async def _count_unread(self) -> dict[str, int]:
        """Stop delivering (as a pause does, for good), then each stream's messages past the
        reader's position: the last chunk's end (asked with a ``last`` subscription) minus the
        first offset not delivered. A reader that never had a chunk has read nothing, and
        nothing was published after it subscribed (its credit would have brought it)."""
        if self.failure is not None:
            raise self.failure
        self._paused = True
        counts = {}
        for partition in self._partitions:
            position = partition.next_offset
            if partition.held:
                position = max(position, partition.held[0].chunk_first_offset)
            if position < 0:
                counts[partition.stream] = 0
                continue
            end = await self._stream_end(partition)
            counts[partition.stream] = max(0, end - position)
        return counts

    async def _stream_end(self, partition: Partition) -> int:
        """The offset after the stream's last message (0 for an empty stream)."""
        client = partition.client
        ends: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        subscription_id = self._new_subscription_id(client)
        key = (id(client), subscription_id)
        self._by_subscription[key] = ends
        try:
            spec = schema.OffsetSpec.from_params(OffsetType.LAST, None)
            await client.subscribe(partition.stream, subscription_id, spec, 1)
            try:
                return await asyncio.wait_for(asyncio.shield(ends), LAST_CHUNK_WAIT_S)
            except TimeoutError:
                return 0
        finally:
            del self._by_subscription[key]
            await client.unsubscribe(subscription_id)

    # -- failures -------------------------------------------------------------------------------
    def _lost(self, info: OnClosedErrorInfo) -> None:
        if self.failure is None:
            self.failure = DriverError(KIND, f"consumer connection lost ({info.reason})")
            log.warning("subscription %s: %s", self._subscription, self.failure)


class StreamConsumer:
    """One consumer of a subscription: its share of the reader's partitions."""

    def __init__(self, reader: SubscriptionReader, member: Member) -> None:
        self._reader = reader
        self._member = member
        self._closed = False

    def pause(self) -> None:
        self._reader.switch(self._member, paused=True)

    def resume(self) -> None:
        self._reader.switch(self._member, paused=False)

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        return self._reader.unread(timeout_s)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._reader.leave(self._member)
            except (TimeoutError, RuntimeError) as error:  # RuntimeError: the loop has stopped
                log.warning("consumer did not close cleanly: %r", error)
