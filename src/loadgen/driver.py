"""The driver API: the one seam between the broker-blind engine and a broker client.

A driver package exposes a ``Driver`` class and registers it in the ``loadgen.drivers``
entry-point group (``kafka = "drivers.kafka:Driver"``), so a third-party package can add a
broker without touching loadgen. Drivers import only this module, ``loadgen.spec`` and
``loadgen.errors``.

Per-message cost is the budget: ``Producer.send`` is non-blocking and calls ``on_done`` once
per message from the client's own delivery path (no future or coroutine per message).
The send timestamp is the driver's business: it stamps the wall-clock time (``time.time_ns()``)
when it hands a message to the client, carries it however its broker allows, and passes it
back to ``on_message`` on the consumer side, with the message id and intended send time the
engine gave ``send``. Each driver documents where it carries them.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from loadgen.errors import ConfigError
from loadgen.spec.driver_spec import DriverSpec

ENTRY_POINT_GROUP = "loadgen.drivers"

OnDone = Callable[..., None]
"""Called once per sent message as ``on_done(error, *client_args)``: ``error`` is ``None`` when the
broker acknowledged the message. A driver may pass its client's own extra arguments after it
(confluent-kafka calls ``on_delivery(err, msg)``), so it can hand ``on_done`` to the client as it
is, with no wrapper allocated per message; the engine ignores them."""

OnMessage = Callable[[bytes, int, int, int, int], None]
"""Called once per received message as ``on_message(payload, sent_ns, message_id, intended_ns,
partition)``: the payload, its send time (epoch ns), the ``message_id`` and ``intended_ns`` the
producer was given in :meth:`Producer.send` (:data:`NO_MESSAGE_ID` and :data:`NO_SEND_TIME_NS` for
a message that carries none), and the index of the partition it was read from (-1 when the
client cannot tell). The engine's loss, duplicate and reorder accounting and its
coordinated-omission-corrected end-to-end latency rest on these."""

STAMP = struct.Struct(">qqq")
"""Send time (epoch ns), message id and intended send time (epoch ns) as 24 big-endian bytes:
the layout the Kafka, Pulsar and RabbitMQ drivers carry in their ``lg-stamp`` header or
property (Pravega marks its own prefix and packs it itself)."""

NO_MESSAGE_ID = -1
"""The ``message_id`` of a message that carries none (readiness probes, messages written by
something else): it is counted as received but stays out of the loss/duplicate accounting."""

NO_SEND_TIME_NS = 2**63 - 1
"""The send time to pass for a message that carries none (Pravega without
``includeTimestampInEvent``): it is counted as received, with no end-to-end latency, and not as
clock skew."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int


@runtime_checkable
class Producer(Protocol):
    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        """Hand one message to the client without blocking; ``on_done`` reports its fate.

        ``message_id`` (a non-negative int64: producer number and sequence, opaque to the driver,
        or :data:`NO_MESSAGE_ID`) and ``intended_ns`` (when the schedule meant the message to go,
        epoch ns) travel with the message beside the send time, and come back to the consumer's
        ``on_message`` unchanged.
        """

    def poll(self, timeout_s: float = 0.0) -> None:
        """Run pending delivery callbacks; with ``timeout_s`` > 0, block until one ran or the
        time is up (clients that call back from their own threads just wait out the time).

        The producer loop calls ``poll()`` between bursts, and waits for the next send time in
        ``poll(wait)``: an ack that arrives while the loop waits is timed when it arrives, not
        when the loop wakes up.
        """

    def flush(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for in-flight messages; return how many are still pending."""

    def close(self) -> None: ...


class CallbackAcks:
    """Producer bookkeeping for clients that acknowledge on a thread of their own.

    ``sent`` is written only by the sending thread and ``completed`` only by the client's
    callback thread, so neither needs a lock. ``poll`` has nothing to run (the callbacks run on
    the client's thread) and only waits; ``flush`` waits until the two counts meet.
    """

    FLUSH_CHECK_S = 0.002

    def __init__(self) -> None:
        self.sent = 0
        self.completed = 0

    def poll(self, timeout_s: float = 0.0) -> None:
        if timeout_s > 0:
            time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while self.sent > self.completed and time.monotonic() < deadline:
            time.sleep(self.FLUSH_CHECK_S)
        return max(0, self.sent - self.completed)


@runtime_checkable
class Consumer(Protocol):
    """A consumer runs on threads it owns from creation until :meth:`close` returns."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def close(self) -> None: ...


class Driver(Protocol):
    """One broker connection configuration, as read from a driver YAML."""

    spec: DriverSpec

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> object:
        """Check the broker section of ``spec`` without connecting (``loadgen validate``)."""

    @classmethod
    def from_config(cls, spec: DriverSpec) -> Driver:
        """Parse the broker section of ``spec``; unknown keys raise :class:`ConfigError`."""

    @property
    def topic_name_prefix(self) -> str: ...

    def check_reachable(self, timeout_s: float) -> None:
        """Raise :class:`loadgen.errors.BrokerUnreachable` (naming the address) if it is down."""

    def create_topics(self, topics: list[TopicSpec]) -> None: ...

    # Optional, for runs split over worker processes: ``adopt_topics(topics: list[TopicSpec])``
    # for a driver that needs to know about topics another worker created (RabbitMQ: their
    # partition count), creating nothing on the broker; ``delete_subscriptions(names)`` deletes
    # what this driver created to consume those topics (RabbitMQ queues, Pravega reader groups)
    # when the run's topics go but another worker deletes the topics. A driver class whose
    # broker lives inside its process sets ``process_local = True`` (the memory driver).
    # ``url_schemes`` with a ``config_from_url(url, config)`` classmethod lets
    # ``loadgen run SCHEME://...`` and ``loadgen probe`` pick the driver (see loadgen.urls).

    def delete_topics(self, names: list[str]) -> None: ...

    def create_producer(self, topic: str) -> Producer: ...

    def create_consumer(self, topic: str, subscription: str, on_message: OnMessage) -> Consumer:
        """Subscribe ``subscription`` to ``topic``; return once the consumer is receiving."""

    def close(self) -> None: ...


def available_drivers() -> dict[str, str]:
    """Installed driver names mapped to their entry-point targets."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_driver_class(spec: DriverSpec) -> type[Driver]:
    """The registered ``Driver`` class for ``spec.kind``."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec.kind:
            return ep.load()
    raise ConfigError(
        f"unknown driver {spec.kind!r}",
        file=spec.source,
        path="driver",
        value=spec.kind,
        allowed=sorted(available_drivers()),
    )


def open_driver(spec: DriverSpec) -> Driver:
    """Instantiate the driver that ``spec`` selects."""
    return load_driver_class(spec).from_config(spec)
