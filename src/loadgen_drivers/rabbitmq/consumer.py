"""A RabbitMQ consumer: a channel on a connection that lives on a consumers' loop thread.

It declares its subscription's queues (one per partition, bound with the partition's routing
key), sets the prefetch (the receiver-queue analogue) and consumes from all of them, so
consumers of one subscription compete on the same queues. With manual acks it acknowledges with
``multiple=True`` every ``prefetch/2`` messages and at least every 50 ms, never the same tag
twice (RabbitMQ closes the channel on that). Pausing cancels the consumptions at the broker,
so a paused consumer takes nothing in (OMB blocks the client's thread instead).

Each queue's deliveries go to a callback bound once to its partition index (queue k holds
routing key k), which ``on_message`` gets with the send time, message id and intended time of
the ``lg-stamp`` header; a message without a well-formed one is skipped (counted, logged
once).

When the connection drops and is reopened (:mod:`loadgen_drivers.rabbitmq.connection`), the consumer
sets up its new channel as it did the first (prefetch, queues, consumptions, unless paused);
what it had received but not yet acknowledged is redelivered by the broker and shows as
duplicates in the run's accounting.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from functools import partial
from time import monotonic, sleep

import pika

from loadgen.base.errors import DriverError
from loadgen.driver_api import STAMP, ForeignMessages, OnMessage
from loadgen_drivers.rabbitmq.connection import LoopThread, SharedConnection
from loadgen_drivers.rabbitmq.producer import STAMP_HEADER

log = logging.getLogger("loadgen.rabbitmq")

READY_TIMEOUT_S = 15.0
SWITCH_TIMEOUT_S = 5.0
ACK_TICK_S = 0.05
RECOUNT_AFTER_S = 0.3
"""After the consumers are cancelled, how long between two counts of what the queues hold: the
count is final once two agree."""

unpack_stamp = STAMP.unpack


class RabbitConsumer:
    def __init__(
        self,
        loop_thread: LoopThread,
        connection: SharedConnection,
        exchange: str,
        bindings: list[tuple[str, str]],
        queue_arguments: dict[str, str],
        prefetch: int,
        auto_ack: bool,
        on_message: OnMessage,
    ) -> None:
        """``bindings`` pairs each queue of the subscription with its routing key."""
        self._thread = loop_thread
        self._loop = loop_thread.loop
        self._connection = connection
        self._exchange = exchange
        self._bindings = bindings
        self._queue_arguments = queue_arguments
        self._prefetch = prefetch
        self._auto_ack = auto_ack
        self._ack_every = max(1, prefetch // 2) if prefetch else 100
        self._on_message = on_message
        self._deliveries = [partial(self._on_delivery, index) for index in range(len(bindings))]
        self._unacked = 0
        self._last_tag = 0
        self._consumer_tags: list[str] = []
        self._channel = None
        self._closing = False
        self._paused = False
        self._ticking = False
        self._ready: Callable[[], None] | None = None
        self.failure: DriverError | None = None
        self.foreign = ForeignMessages(log, f"a well-formed {STAMP_HEADER} header")
        ready = loop_thread.call_and_wait(self._start, READY_TIMEOUT_S)
        if self.failure is None and not ready:
            self.failure = DriverError(
                "rabbitmq",
                f"consumer on {connection.address} not ready within {READY_TIMEOUT_S:.0f} s",
            )
        if self.failure is not None:
            self.close()
            raise self.failure

    # -- set-up, on the consumers' loop --------------------------------------------------------
    def _start(self, ready: Callable[[], None]) -> None:
        self._ready = ready
        self._connection.open_channel(self._on_channel, self._on_lost)

    def _signal_ready(self) -> None:
        ready, self._ready = self._ready, None
        if ready is not None:
            ready()

    def _on_channel(self, channel) -> None:
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.basic_qos(prefetch_count=self._prefetch, callback=lambda _: self._declare(0))

    def _declare(self, index: int) -> None:
        if index == len(self._bindings):
            if self._paused:
                self._signal_ready()
            else:
                self._consume_all(self._signal_ready)
            if not (self._auto_ack or self._ticking):
                self._ticking = True
                self._loop.call_later(ACK_TICK_S, self._ack_tick)
            return
        queue, routing_key = self._bindings[index]
        channel = self._channel

        def bind(_frame: object) -> None:
            channel.queue_bind(
                queue, self._exchange, routing_key, callback=lambda _: self._declare(index + 1)
            )

        channel.queue_declare(queue, durable=True, arguments=self._queue_arguments, callback=bind)

    def _consume_all(self, then: Callable[[], None]) -> None:
        self._paused = False
        if self._channel is None:  # reconnecting: the new channel will consume
            then()
            return
        waiting = len(self._bindings)

        def started(_frame: object) -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0:
                then()

        self._consumer_tags = [
            self._channel.basic_consume(queue, deliver, auto_ack=self._auto_ack, callback=started)
            for (queue, _), deliver in zip(self._bindings, self._deliveries, strict=True)
        ]

    def _cancel_all(self, then: Callable[[], None]) -> None:
        self._paused = True
        self._ack_pending()
        tags, self._consumer_tags = self._consumer_tags, []
        waiting = len(tags)

        def cancelled(_frame: object) -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0:
                then()

        for tag in tags:
            self._channel.basic_cancel(tag, callback=cancelled)
        if not tags:
            then()

    # -- delivery --------------------------------------------------------------------------------
    def _on_delivery(self, partition: int, channel, method, properties, body: bytes) -> None:
        try:
            sent_ns, message_id, intended_ns = unpack_stamp(properties.headers[STAMP_HEADER])
        except (KeyError, TypeError, struct.error):  # TypeError: no headers, or not bytes
            self.foreign()
        else:
            self._on_message(body, sent_ns, message_id, intended_ns, partition)
        if not self._auto_ack:
            self._last_tag = method.delivery_tag
            self._unacked += 1
            if self._unacked >= self._ack_every:
                channel.basic_ack(self._last_tag, multiple=True)
                self._unacked = 0

    def _ack_pending(self) -> None:
        if self._unacked and self._channel is not None and self._channel.is_open:
            self._channel.basic_ack(self._last_tag, multiple=True)
            self._unacked = 0

    def _ack_tick(self) -> None:
        self._ack_pending()
        if not self._closing:
            self._loop.call_later(ACK_TICK_S, self._ack_tick)

    # -- failures ----------------------------------------------------------------------------------
    def _on_lost(self, failure: DriverError) -> None:
        if self._connection.failure is None:  # being reopened: start over on the new channel
            self._channel = None
            self._consumer_tags = []
            self._unacked = 0
        else:
            self._give_up(failure)

    def _on_channel_closed(self, _channel: object, reason: BaseException) -> None:
        # a lost connection closes its channels too: _on_lost hears of it and says what next
        if not self._closing and isinstance(reason, pika.exceptions.ChannelClosed):
            self._give_up(
                DriverError("rabbitmq", f"consumer channel on {self._exchange} closed: {reason!r}")
            )

    def _give_up(self, failure: DriverError) -> None:
        if self.failure is None:
            self.failure = failure
            log.warning("consumer on exchange %s: %s", self._exchange, failure)
        self._signal_ready()

    # -- the engine's side --------------------------------------------------------------------
    def pause(self) -> None:
        if not self._thread.call_and_wait(self._cancel_all, SWITCH_TIMEOUT_S):
            log.warning("the consumer did not pause within %.0f s", SWITCH_TIMEOUT_S)

    def resume(self) -> None:
        if not self._thread.call_and_wait(self._consume_all, SWITCH_TIMEOUT_S):
            log.warning("the consumer did not resume within %.0f s", SWITCH_TIMEOUT_S)

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """Each queue's ready messages (delivered ones are the consumer's), by passive declares
        on the consumer's channel once its consumers are cancelled, repeated until two agree.

        A delivery the broker has taken off the queue but not yet written to the socket is not
        in a count taken then, and RabbitMQ's channel can answer a declare, or a cancel, ahead
        of deliveries it has queued: a count taken while consuming leaves such messages neither
        received nor counted, so called lost (bench/results/loaded-host.md "Flake hunt").
        Cancelled, the consumers take nothing more off the queues, and pika rejects (requeues)
        what still arrives for them; so the count only grows, by those, and is final once it
        stops: every message then either received or counted, never both."""
        deadline = monotonic() + timeout_s
        counts: dict[str, int] = {}

        def cancel_then_count(done: Callable[[], None]) -> None:
            self._cancel_all(lambda: self._count(counts, done))

        if not self._thread.call_and_wait(cancel_then_count, timeout_s):
            return None
        while len(counts) == len(self._bindings):
            sleep(RECOUNT_AFTER_S)
            again: dict[str, int] = {}
            if (
                not self._thread.call_and_wait(partial(self._count, again), deadline - monotonic())
                or again == counts
            ):
                break
            counts = again
        return counts if len(counts) == len(self._bindings) else None

    def _count(self, counts: dict[str, int], done: Callable[[], None]) -> None:
        channel = self._channel
        if channel is None or not channel.is_open:
            done()
            return
        for queue, _ in self._bindings:

            def counted(frame, queue: str = queue) -> None:
                counts[queue] = frame.method.message_count
                if len(counts) == len(self._bindings):
                    done()

            channel.queue_declare(queue, passive=True, callback=counted)

    def close(self) -> None:
        self._thread.call_and_wait(self._shut_down, SWITCH_TIMEOUT_S)

    def _shut_down(self, done: Callable[[], None]) -> None:
        if not self._closing:
            self._closing = True
            self._ack_pending()
            if self._channel is not None and self._channel.is_open:
                self._channel.close()
            self._connection.release(self._on_lost)
        done()
