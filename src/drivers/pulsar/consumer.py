"""A Pulsar consumer: one client consumer on the whole topic, fed by a message listener.

The listener runs on the client's listener thread (``listenerThreads``), owned by the client
from ``subscribe`` until :meth:`PulsarConsumer.close`. On a partitioned topic the client
subscribes to every partition itself (OMB creates one consumer per partition; the receiver
queue applies per partition either way, capped by ``maxTotalReceiverQueueSizeAcrossPartitions``).
Each message is acknowledged after ``on_message`` (OMB: an async ack per message); the client
groups acks and sends them every 100 ms, cumulative ones per partition. ``pause`` stops the
listener: the receiver queues fill and the broker stops dispatching (OMB blocks the listener
thread instead).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from drivers.pulsar.client import pulsar
from drivers.pulsar.producer import TIMESTAMP_PROPERTY
from loadgen.driver import OnMessage

log = logging.getLogger("loadgen.pulsar")

Acknowledge = Callable[[pulsar.Consumer, pulsar.Message], None]


class PulsarConsumer:
    def __init__(
        self,
        client: pulsar.Client,
        topic: str,
        subscription: str,
        on_message: OnMessage,
        settings: dict,
        cumulative: bool,
    ) -> None:
        self._on_message = on_message
        self._ack: Acknowledge = (
            pulsar.Consumer.acknowledge_cumulative if cumulative else pulsar.Consumer.acknowledge
        )
        self.foreign_messages = 0
        self.errors = 0
        self._consumer = client.subscribe(
            topic, subscription, message_listener=self._listen, **settings
        )

    def _listen(self, consumer: pulsar.Consumer, message: pulsar.Message) -> None:
        """Called by the client per message; an exception must not reach the C++ side."""
        try:
            sent_ns = message.properties().get(TIMESTAMP_PROPERTY)
            if sent_ns is None:
                self._on_foreign()
            else:
                self._on_message(message.data(), int(sent_ns))
            self._ack(consumer, message)
        except Exception as error:
            self._on_error(error)

    def _on_foreign(self) -> None:
        self.foreign_messages += 1
        if self.foreign_messages == 1:
            log.warning(
                "skipping messages without the %s property (not sent by loadgen)",
                TIMESTAMP_PROPERTY,
            )

    def _on_error(self, error: Exception) -> None:
        self.errors += 1
        if self.errors in (1, 10, 100, 1000):
            log.warning("consumer error #%d: %r", self.errors, error)

    def pause(self) -> None:
        self._consumer.pause_message_listener()

    def resume(self) -> None:
        self._consumer.resume_message_listener()

    def close(self) -> None:
        with contextlib.suppress(pulsar.AlreadyClosed):
            self._consumer.close()
