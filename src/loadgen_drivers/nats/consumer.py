"""A NATS JetStream consumer: one puller of a subscription's durable pull consumer.

It keeps one pull request open (``pullBatch`` messages, expiring after ``pullExpiresMs``) on an
inbox of its own and asks for the next when the batch is full or the server ends the request
(status 404/408/409). The durable consumer acknowledges with ``AckPolicy.ALL``: one ack of a
batch's last message settles the whole batch. Deliveries run ``on_message`` on the driver's
loop thread, the partition read from the subject's last token.

Paused, it sends no pull request, and what the open one still delivers is held back (not
recorded, not acknowledged) until it resumes. :meth:`unread` stops it for good, acknowledges
what it recorded, and counts the durable consumer's pending and unacknowledged messages:
every message is then either received or unread.
"""

from __future__ import annotations

import asyncio
import json
import logging

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from loadgen.driver_api import ForeignMessages, OnMessage, prefixed_deliveries
from loadgen.driver_api.loop_thread import LoopThread
from loadgen_drivers.nats.config import NatsConfig
from loadgen_drivers.nats.naming import partition_of
from loadgen_drivers.nats.stamp import read_stamp

log = logging.getLogger("loadgen.nats")

SETUP_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 5.0
ACK_WAIT_S = 30.0
"""The durable consumer's ``ack_wait``: a delivered message not acknowledged within it is sent
again. Held messages (paused) are kept from that with ``+WPI`` (work in progress) every third."""
HEARTBEAT = "100"
STATUS = "Status"


class NatsConsumer:
    def __init__(
        self, loop_thread: LoopThread, connection: Client, js: JetStreamContext, stream: str,
        durable: str, config: NatsConfig, on_message: OnMessage,
    ) -> None:  # fmt: skip
        self._thread = loop_thread
        self._nc = connection
        self._js = js
        self._stream = stream
        self._durable = durable
        self._next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}"
        self._batch = config.pull_batch
        expires_s = config.pull_expires_ms / 1000
        self._request = json.dumps(
            {"batch": config.pull_batch, "expires": config.pull_expires_ms * 1_000_000}
        ).encode()
        self._stale_after_s = 2 * expires_s + 1.0
        self._on_message = on_message
        recorder = prefixed_deliveries(on_message)
        self._on_prefixed = recorder.on_prefixed if recorder is not None else None
        self._foreign = ForeignMessages(log, "a loadgen stamp (payload prefix or lg-stamp header)")
        self._partitions: dict[str, int] = {}
        self._in_pull = 0
        self._last_reply: str | None = None
        self._last_pull = 0.0
        self._paused = False
        self._stopped = False
        self._held: list[Msg] = []
        self._held_noted = 0.0
        self._inbox = connection.new_inbox()
        self._subscription = None
        self._watchdog: asyncio.Task | None = None
        self._resumed: asyncio.Future | None = None
        loop_thread.run(self._start(), SETUP_TIMEOUT_S)

    async def _start(self) -> None:
        self._subscription = await self._nc.subscribe(self._inbox, cb=self._on_delivery)
        self._watchdog = asyncio.ensure_future(self._watch())
        await self._pull()

    # -- pulls (loop thread) --------------------------------------------------------------------
    async def _pull(self) -> None:
        self._in_pull = 0
        self._last_pull = asyncio.get_running_loop().time()
        if not (self._paused or self._stopped):
            await self._nc.publish(self._next_subject, self._request, self._inbox)

    async def _end_pull(self) -> None:
        """The open request is over: acknowledge what it brought, ask for the next."""
        await self._ack()
        await self._pull()

    async def _ack(self) -> None:
        reply, self._last_reply = self._last_reply, None
        if reply:
            await self._nc.publish(reply, b"")  # AckPolicy.ALL: every message up to this one

    async def _watch(self) -> None:
        """Re-asks when a request went unanswered (lost in a reconnect): a pull that sees no
        message or status for twice its expiry is over. Paused, it keeps the held messages'
        ack timers from running out."""
        loop = asyncio.get_running_loop()
        while not self._stopped:
            await asyncio.sleep(self._stale_after_s / 2)
            now = loop.time()
            if self._paused and self._held and now - self._held_noted > ACK_WAIT_S / 3:
                self._held_noted = now
                for msg in self._held:  # still being worked on: not to be sent again
                    await self._nc.publish(msg.reply, b"+WPI")
            idle = now - self._last_pull
            if not self._paused and not self._stopped and idle > self._stale_after_s:
                await self._end_pull()

    async def _on_delivery(self, msg: Msg) -> None:
        if self._stopped:
            return
        headers = msg.headers
        if headers and STATUS in headers:
            if headers[STATUS] != HEARTBEAT:  # 404 no messages, 408 expired, 409 limits
                await self._end_pull()
            return
        self._last_pull = asyncio.get_running_loop().time()
        if self._paused:
            if not self._held:
                self._held_noted = asyncio.get_running_loop().time()
            self._held.append(msg)
        else:
            self._record(msg)
        self._in_pull += 1
        if self._in_pull >= self._batch:
            await self._end_pull()

    def _record(self, msg: Msg) -> None:
        subject = msg.subject
        partition = self._partitions.get(subject)
        if partition is None:
            partition = self._partitions[subject] = partition_of(subject)
        data = msg.data
        self._last_reply = msg.reply
        if self._on_prefixed is not None and self._on_prefixed(data, partition):
            return
        try:
            sent_ns, message_id, intended_ns = read_stamp(data, msg.headers)
        except ValueError:
            self._foreign()
            return
        self._on_message(data, sent_ns, message_id, intended_ns, partition)

    # -- the engine's side ----------------------------------------------------------------------
    def pause(self) -> None:
        self._thread.call(self._set_paused, True)

    def resume(self) -> None:
        self._thread.call(self._set_paused, False)

    def _set_paused(self, paused: bool) -> None:
        if self._paused == paused or self._stopped:
            return
        self._paused = paused
        if not paused:
            held, self._held = self._held, []
            for msg in held:
                self._record(msg)
            self._resumed = asyncio.ensure_future(self._end_pull())

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """The durable consumer's pending plus unacknowledged messages, once this consumer has
        stopped and acknowledged everything it recorded."""
        try:
            count = self._thread.run(self._count(), timeout_s)
        except Exception as error:
            log.warning("no consumer info for %s/%s: %r", self._stream, self._durable, error)
            return None
        return {f"{self._stream}/{self._durable}": count}

    async def _count(self) -> int:
        self._stopped = True
        await self._ack()
        await self._nc.flush()  # the ack is in before the info request
        info = await self._js.consumer_info(self._stream, self._durable)
        return info.num_pending + info.num_ack_pending

    def close(self) -> None:
        try:
            self._thread.run(self._close(), CLOSE_TIMEOUT_S)
        except Exception as error:  # a closed connection has nothing left to stop
            log.debug("closing a consumer of %s: %r", self._stream, error)

    async def _close(self) -> None:
        if not self._stopped:
            self._stopped = True
            await self._ack()
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._subscription is not None:
            await self._subscription.unsubscribe()
