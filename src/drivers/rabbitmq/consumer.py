"""A RabbitMQ consumer: one connection and channel on a thread (and event loop) it owns.

It declares its subscription's queues (one per partition, bound with the partition's routing
key), sets the prefetch (the receiver-queue analogue) and consumes from all of them, so
consumers of one subscription compete on the same queues. With manual acks it acknowledges with
``multiple=True`` every ``prefetch/2`` messages and at least every 50 ms, never the same tag
twice (RabbitMQ closes the channel on that). Pausing cancels the consumptions at the broker,
so a paused consumer takes nothing in (OMB blocks the client's thread instead).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import pika
from pika.adapters.asyncio_connection import AsyncioConnection

from drivers.rabbitmq.producer import TIMESTAMP_HEADER
from loadgen.driver import OnMessage
from loadgen.errors import DriverError

log = logging.getLogger("loadgen.rabbitmq")

READY_TIMEOUT_S = 15.0
SWITCH_TIMEOUT_S = 5.0
ACK_TICK_S = 0.05


class RabbitConsumer:
    def __init__(
        self,
        parameters: pika.URLParameters,
        address: str,
        exchange: str,
        bindings: list[tuple[str, str]],
        queue_arguments: dict[str, str],
        prefetch: int,
        auto_ack: bool,
        on_message: OnMessage,
    ) -> None:
        """``bindings`` pairs each queue of the subscription with its routing key."""
        self._address = address
        self._exchange = exchange
        self._bindings = bindings
        self._queue_arguments = queue_arguments
        self._prefetch = prefetch
        self._auto_ack = auto_ack
        self._ack_every = max(1, prefetch // 2) if prefetch else 100
        self._on_message = on_message
        self._unacked = 0
        self._last_tag = 0
        self._consumer_tags: list[str] = []
        self._channel = None
        self._closing = False
        self.failure: DriverError | None = None
        self.foreign_messages = 0
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._connection = AsyncioConnection(
            parameters,
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_closed,
            custom_ioloop=self._loop,
        )
        self._thread = threading.Thread(
            target=self._run, name=f"rabbitmq-consumer-{exchange}", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_S):
            self.close()
            raise DriverError(
                "rabbitmq", f"consumer on {address} not ready within {READY_TIMEOUT_S:.0f} s"
            )
        if self.failure is not None:
            self.close()
            raise self.failure

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    # -- set-up, on the consumer's loop --------------------------------------------------------
    def _on_open(self, connection: AsyncioConnection) -> None:
        connection.channel(on_open_callback=self._on_channel)

    def _on_channel(self, channel) -> None:
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.basic_qos(prefetch_count=self._prefetch, callback=lambda _: self._declare(0))

    def _declare(self, index: int) -> None:
        if index == len(self._bindings):
            self._consume_all(self._ready.set)
            if not self._auto_ack:
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
        waiting = len(self._bindings)

        def started(_frame: object) -> None:
            nonlocal waiting
            waiting -= 1
            if waiting == 0:
                then()

        self._consumer_tags = [
            self._channel.basic_consume(
                queue, self._on_delivery, auto_ack=self._auto_ack, callback=started
            )
            for queue, _ in self._bindings
        ]

    def _cancel_all(self, then: Callable[[], None]) -> None:
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
    def _on_delivery(self, channel, method, properties, body: bytes) -> None:
        headers = properties.headers
        sent_ns = headers.get(TIMESTAMP_HEADER) if headers else None
        if sent_ns is None:
            self._on_foreign()
        else:
            self._on_message(body, sent_ns)
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

    def _on_foreign(self) -> None:
        self.foreign_messages += 1
        if self.foreign_messages == 1:
            log.warning(
                "skipping messages without the %s header (not sent by loadgen)", TIMESTAMP_HEADER
            )

    # -- failures ----------------------------------------------------------------------------------
    def _on_open_error(self, _connection: object, error: BaseException) -> None:
        self.failure = DriverError("rabbitmq", f"cannot connect to {self._address}: {error!r}")
        self._ready.set()
        self._loop.stop()

    def _on_closed(self, _connection: object, reason: BaseException) -> None:
        if not self._closing:
            self.failure = DriverError(
                "rabbitmq", f"consumer connection to {self._address} closed: {reason!r}"
            )
            log.warning("%s", self.failure)
        self._ready.set()
        self._loop.stop()

    def _on_channel_closed(self, _channel: object, reason: BaseException) -> None:
        if not self._closing:
            self.failure = DriverError(
                "rabbitmq", f"consumer channel on {self._exchange} closed: {reason!r}"
            )
            log.warning("%s", self.failure)
            self._ready.set()
            if self._connection.is_open:
                self._connection.close()

    # -- the engine's side --------------------------------------------------------------------
    def _on_loop(self, action: Callable[[Callable[[], None]], None], what: str) -> None:
        """Run ``action(done)`` on the consumer's loop and wait until it calls ``done``."""
        finished = threading.Event()
        if not self._thread.is_alive():
            return
        self._loop.call_soon_threadsafe(action, finished.set)
        if not finished.wait(SWITCH_TIMEOUT_S):
            log.warning("the consumer did not %s within %.0f s", what, SWITCH_TIMEOUT_S)

    def pause(self) -> None:
        self._on_loop(self._cancel_all, "pause")

    def resume(self) -> None:
        self._on_loop(self._consume_all, "resume")

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._shut_down)
            self._thread.join(SWITCH_TIMEOUT_S * 2)

    def _shut_down(self) -> None:
        self._closing = True
        self._ack_pending()
        if self._connection.is_open or self._connection.is_opening:
            self._connection.close()
        else:
            self._loop.stop()
