"""A Pulsar producer: ``send_async`` with the send time, message id and intended time stamped in.

They travel in the payload's first 32 bytes, or in a property for a shorter payload
(:mod:`.stamp`). The C++ client calls back from its I/O thread with ``(result, message_id)``; a
bound ``partial`` per message turns that into the engine's ``on_done(error)``. Messages are built
with the client's own ``MessageBuilder`` and handed to the native producer: the public
``send_async`` re-checks ten optional arguments' types and runs the bytes schema per message,
0.8 µs of the ~19 µs a message costs the client (bench/results/pulsar.md "Pulsar producer
path"). With
``blockIfQueueFull`` a full pending queue blocks ``send`` (the wait shows up as publish delay);
without it the client fails the message at once with ``ProducerQueueIsFull``, which reaches
``on_done`` as an error like every other failure: nothing is dropped silently.
"""

from __future__ import annotations

import logging
from binascii import b2a_base64
from functools import partial
from time import time_ns

from loadgen.base.errors import DriverError
from loadgen.driver_api import STAMP, CallbackAcks, OnDone
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer
from loadgen_drivers.pulsar.client import pulsar
from loadgen_drivers.pulsar.stamp import STAMP_PROPERTY

log = logging.getLogger("loadgen.pulsar")

CLOSE_TIMEOUT_S = 5.0
OK = pulsar.Result.Ok.value
"""Compared by ``.value``: ``==`` on the client's enum costs 0.6 µs, on the I/O thread, per ack."""
MessageBuilder = pulsar._pulsar.MessageBuilder
pack_stamp = STAMP.pack


class SendFailed(DriverError):
    def __init__(self, result: object) -> None:
        super().__init__("pulsar", f"send failed: {result}")


class PulsarProducer(CallbackAcks):
    def __init__(self, producer: pulsar.Producer) -> None:
        super().__init__()
        self._producer = producer
        self._send_async = producer._producer.send_async  # the native one, see the module doc
        self._stamped = Prefixer().stamped
        self._on_sent = self._complete  # bound once: a bound method per message is one more
        # object for the garbage collector to walk while the message is in flight

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        self.sent += 1
        if len(payload) >= PREFIX_BYTES:
            message = MessageBuilder().content(
                self._stamped(payload, time_ns(), message_id, intended_ns)
            )
        else:
            message = MessageBuilder().content(payload)
            stamp = b2a_base64(pack_stamp(time_ns(), message_id, intended_ns), newline=False)
            message.property(STAMP_PROPERTY, stamp.decode())
        if key is not None:
            message.partition_key(key.decode("latin-1"))
        try:
            self._send_async(message.build(), partial(self._on_sent, on_done))
        except pulsar.PulsarException as error:
            self.completed += 1
            on_done(SendFailed(error))

    def _complete(self, on_done: OnDone, result: pulsar.Result, _message_id: object) -> None:
        self.completed += 1
        on_done(None if result.value == OK else SendFailed(result))

    def close(self) -> None:
        pending = self.flush(CLOSE_TIMEOUT_S)
        if pending:
            log.warning("closing a producer with %d messages still unacknowledged", pending)
        try:
            self._producer.close()
        except pulsar.PulsarException as error:
            log.warning("closing a producer failed: %s", error)
