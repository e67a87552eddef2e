"""A RabbitMQ producer: asynchronous publisher confirms on a stepped event loop.

Each producer has its own channel in confirm mode, on a connection it may share. Delivery tags
are counted locally (the broker numbers publishes 1, 2, 3... per channel); an ack or nack with
``multiple=True`` settles every outstanding tag up to its own, and a tag is settled once only.
With ``mandatory`` the broker returns a message no queue is bound for (``basic.return``, then
its ack): the producer stamps the delivery tag into a ``lg-seq`` header so the return can be
matched, and reports that message as failed. At most ``maxInFlight`` messages await a confirm;
a full window blocks ``send`` (stepping the loop) like a full client queue blocks elsewhere.

When the connection drops and is being reopened (:mod:`loadgen_drivers.rabbitmq.connection`), the
messages awaiting a confirm fail, and so does every send until the new channel is ready: the
engine counts them as publish errors, and the run goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import time_ns
from zlib import crc32

import pika
from pika.spec import Basic

from loadgen.base.errors import DriverError
from loadgen.driver_api import STAMP, OnDone
from loadgen_drivers.rabbitmq.config import RabbitMqConfig
from loadgen_drivers.rabbitmq.connection import SharedConnection
from loadgen_drivers.rabbitmq.pump import Pump

log = logging.getLogger("loadgen.rabbitmq")

STAMP_HEADER = "lg-stamp"
"""Carries :data:`loadgen.driver_api.STAMP`, 24 bytes, as an AMQP byte array (the AMQP
``timestamp`` property is whole seconds).
pika encodes one ``bytes`` value in about half the time of three ``int`` ones."""
SEQUENCE_HEADER = "lg-seq"
CONNECT_TIMEOUT_S = 15.0
FULL_WINDOW_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 5.0

pack_stamp = STAMP.pack

NACKED = DriverError("rabbitmq", "the broker nacked the message")
RETURNED = DriverError("rabbitmq", "the broker returned the message: no queue is bound for it")
WINDOW_STUCK = DriverError(
    "rabbitmq", f"no publisher confirm arrived for {FULL_WINDOW_TIMEOUT_S:.0f} s"
)


class RabbitProducer:
    def __init__(
        self,
        pump: Pump,
        connection: SharedConnection,
        exchange: str,
        partitions: int,
        config: RabbitMqConfig,
    ) -> None:
        self._pump = pump
        self._connection = connection
        self._exchange = exchange
        self._routing_keys = [str(k) for k in range(partitions)]
        self._round_robin = 0
        self._confirms = config.confirms
        self._window = config.max_in_flight
        self._track_returns = config.mandatory and config.confirms
        self._mandatory = config.mandatory
        self._headers: dict[str, bytes | int] = {STAMP_HEADER: b""}
        self._properties = pika.BasicProperties(
            headers=self._headers, delivery_mode=2 if config.message_persistence else None
        )
        self._outstanding: dict[int, OnDone] = {}
        self._returned: set[int] = set()
        self._next_tag = 1
        self._lowest_unsettled = 1
        self._channel = None
        self._publish: Callable[..., None] | None = None
        self._closing = False
        self._unmatched_returns = 0
        self.failure: DriverError | None = None
        self._down: DriverError | None = None
        connection.open_channel(self._on_channel, self._on_lost)
        ready = pump.run_until(
            lambda: self._publish is not None or self.failure is not None, CONNECT_TIMEOUT_S
        )
        if self.failure is None and not ready:
            self.failure = DriverError(
                "rabbitmq", f"no channel on {connection.address} within {CONNECT_TIMEOUT_S:.0f} s"
            )
        if self.failure is not None:
            self._closing = True
            connection.release(self._on_lost)
            raise self.failure

    # -- channel set-up (callbacks on the pump's loop) ------------------------------------------
    def _on_channel(self, channel) -> None:
        """The first channel, or a new one on a reopened connection: tags start again at 1."""
        self._channel = channel
        self._next_tag = self._lowest_unsettled = 1
        self._returned.clear()
        channel.add_on_close_callback(self._on_channel_closed)
        if self._mandatory:
            channel.add_on_return_callback(self._on_return)
        if self._confirms:
            channel.confirm_delivery(self._on_confirm, callback=self._on_ready)
        else:
            self._on_ready(None)

    def _on_ready(self, _frame: object) -> None:
        self._publish = self._channel.basic_publish
        self._down = None
        self._pump.wake()

    def _on_lost(self, failure: DriverError) -> None:
        if self._connection.failure is None:  # being reopened: fail what was in flight only
            self._down = failure
            self._fail_in_flight(failure)
        else:
            self._fail(failure)

    def _on_channel_closed(self, _channel: object, reason: BaseException) -> None:
        # a lost connection closes its channels too; the connection's own callback says whether
        # it comes back (_on_lost), so only the broker closing this channel ends the producer
        if not self._closing and isinstance(reason, pika.exceptions.ChannelClosed):
            self._fail(
                DriverError("rabbitmq", f"channel on {self._connection.address} closed: {reason!r}")
            )

    def _fail(self, failure: DriverError) -> None:
        """The producer is dead: every message awaiting a confirm and every later one fails."""
        if self.failure is None:
            log.warning("producer on exchange %s: %s", self._exchange, failure)
            self.failure = failure
        self._fail_in_flight(failure)

    def _fail_in_flight(self, failure: DriverError) -> None:
        self._publish = None
        outstanding, self._outstanding = self._outstanding, {}
        for on_done in outstanding.values():
            on_done(failure)
        self._pump.wake()

    # -- confirms -------------------------------------------------------------------------------
    def _on_confirm(self, frame) -> None:
        method = frame.method
        error = None if isinstance(method, Basic.Ack) else NACKED
        tag = method.delivery_tag
        if method.multiple:
            for settled in range(self._lowest_unsettled, tag + 1):
                self._settle(settled, error)
            self._lowest_unsettled = max(self._lowest_unsettled, tag + 1)
        else:
            self._settle(tag, error)
        self._pump.wake()

    def _settle(self, tag: int, error: DriverError | None) -> None:
        on_done = self._outstanding.pop(tag, None)
        if on_done is None:
            return
        if self._returned and tag in self._returned:
            self._returned.discard(tag)
            error = error or RETURNED
        on_done(error)

    def _on_return(self, _channel, method, properties, _body) -> None:
        tag = (properties.headers or {}).get(SEQUENCE_HEADER)
        if tag in self._outstanding:
            self._returned.add(tag)
            return
        # without confirms the message was already reported as sent: all we can do is say so
        self._unmatched_returns += 1
        if self._unmatched_returns == 1:
            log.warning(
                "the broker returned messages on exchange %s (%s %s); without confirms they are "
                "not counted as errors",
                self._exchange,
                method.reply_code,
                method.reply_text,
            )

    # -- the engine's side ----------------------------------------------------------------------
    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        if len(self._outstanding) >= self._window and not self._wait_for_room():
            on_done(self.failure or self._down or WINDOW_STUCK)
            return
        publish = self._publish
        if publish is None:
            on_done(self.failure or self._down)
            return
        keys = self._routing_keys
        if key is None:
            routing_key = keys[self._round_robin % len(keys)]
            self._round_robin += 1
        else:
            routing_key = keys[crc32(key) % len(keys)]
        tag = self._next_tag
        self._next_tag = tag + 1
        headers = self._headers
        headers[STAMP_HEADER] = pack_stamp(time_ns(), message_id, intended_ns)
        if self._track_returns:
            headers[SEQUENCE_HEADER] = tag
        # pika encodes the properties inside basic_publish, so one object serves every message
        publish(self._exchange, routing_key, payload, self._properties, self._mandatory)
        if self._confirms:
            self._outstanding[tag] = on_done
        else:
            on_done(None)

    def _wait_for_room(self) -> bool:
        window = self._window
        return (
            self._pump.run_until(
                lambda: len(self._outstanding) < window or self._publish is None,
                FULL_WINDOW_TIMEOUT_S,
            )
            and self._publish is not None
        )

    def poll(self, timeout_s: float = 0.0) -> None:
        if timeout_s > 0:
            self._pump.wait_for_callback(timeout_s)
        else:
            self._pump.step_unless_recent()

    def flush(self, timeout_s: float) -> int:
        self._pump.run_until(lambda: not self._outstanding, timeout_s)
        return len(self._outstanding)

    def close(self) -> None:
        if self._closing:
            return
        self.flush(CLOSE_TIMEOUT_S)
        self._closing = True
        if self._channel is not None and self._channel.is_open:
            self._channel.close()
        connection = self._connection
        connection.release(self._on_lost)
        self._pump.run_until(lambda: connection.users > 0 or connection.is_closed, CLOSE_TIMEOUT_S)
