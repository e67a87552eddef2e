"""A Pulsar consumer: one client consumer on the whole topic, fed by a message listener.

The listener runs on the client's listener thread (``listenerThreads``), owned by the client
from ``subscribe`` until :meth:`PulsarConsumer.close`. On a partitioned topic the client
subscribes to every partition itself (OMB creates one consumer per partition; the receiver
queue applies per partition either way, capped by ``maxTotalReceiverQueueSizeAcrossPartitions``).
Each message is acknowledged after ``on_message`` (OMB: an async ack per message); the client
groups acks and sends them every 100 ms, cumulative ones per partition. ``pause`` stops the
listener: the receiver queues fill and the broker stops dispatching (OMB blocks the listener
thread instead).

The send time, message id and intended time come from the payload's prefix or the ``lg-stamp``
property (:mod:`.stamp`); a message with neither is skipped (counted, logged once). The
partition index is read from the suffix of the partition's topic name (``…-partition-3``),
parsed once per partition and cached; a non-partitioned topic is its own only partition, 0.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from loadgen.driver_api import ForeignMessages, OnMessage, prefixed_deliveries
from loadgen_drivers.pulsar.client import pulsar
from loadgen_drivers.pulsar.stamp import STAMP_PROPERTY, read_stamp

log = logging.getLogger("loadgen.pulsar")

Acknowledge = Callable[[pulsar.Consumer, pulsar.Message], None]

PARTITION_SUFFIX = "-partition-"


def partition_of(topic_name: str) -> int:
    """The index in a partition's topic name (``persistent://t/n/x-partition-3`` → 3); 0 for a
    non-partitioned topic."""
    _, suffix, index = topic_name.rpartition(PARTITION_SUFFIX)
    return int(index) if suffix and index.isdecimal() else 0


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
        recorder = prefixed_deliveries(on_message)
        self._on_prefixed = recorder.on_prefixed if recorder is not None else None
        self._ack: Acknowledge = (
            pulsar.Consumer.acknowledge_cumulative if cumulative else pulsar.Consumer.acknowledge
        )
        self.foreign = ForeignMessages(
            log, f"loadgen's payload prefix or a well-formed {STAMP_PROPERTY} property"
        )
        self.errors = 0
        self._partitions: dict[str, int] = {}
        self._consumer = client.subscribe(
            topic, subscription, message_listener=self._listen, **settings
        )

    def _listen(self, consumer: pulsar.Consumer, message: pulsar.Message) -> None:
        """Called by the client per message; an exception must not reach the C++ side."""
        try:
            data = message.data()
            topic = message.topic_name()
            partition = self._partitions.get(topic)
            if partition is None:
                partition = self._partitions[topic] = partition_of(topic)
            if self._on_prefixed is None or not self._on_prefixed(data, partition):
                try:
                    sent_ns, message_id, intended_ns = read_stamp(data, message.properties)
                except ValueError:  # binascii.Error is a ValueError
                    self.foreign()
                else:
                    self._on_message(data, sent_ns, message_id, intended_ns, partition)
            self._ack(consumer, message)
        except Exception as error:
            self._on_error(error)

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
