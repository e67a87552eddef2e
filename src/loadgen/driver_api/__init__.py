"""The driver API: the one seam between the broker-blind engine and a broker client.

A driver package exposes a subclass of :class:`BaseDriver` and registers it in the
``loadgen.drivers`` entry-point group (``kafka = "loadgen_drivers.kafka:Driver"``), so a third-party
package can add a broker without touching loadgen: the class declares what the engine needs to
know (URL schemes, OMB ``driverClass`` names, client distributions, probe settings), and the
engine has no list of brokers. Drivers import of loadgen only this package, ``loadgen.spec`` and
``loadgen.base`` (tests/unit/test_layers.py). How to write one: docs/extending/drivers.md.

Per-message cost is the budget: ``Producer.send`` is non-blocking and calls ``on_done`` once
per message from the client's own delivery path (no future or coroutine per message).
The send timestamp is the driver's business: it stamps the wall-clock time (``time.time_ns()``)
when it hands a message to the client, carries it however its broker allows, and passes it
back to ``on_message`` on the consumer side, with the message id and intended send time the
engine gave ``send``. Each driver documents where it carries them. A driver whose client takes
the payload as it is may instead let the producer loop stamp the payload's prefix and call the
client itself (:class:`PrefixedSend`): compiled, the loop then runs no Python bytecode per message.
"""

from __future__ import annotations

import logging
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable
from urllib.parse import urlsplit

from loadgen.base.errors import ConfigError
from loadgen.base.redaction import declare_secrets
from loadgen.base.refusal import Address as Address
from loadgen.base.refusal import fail_if_refused as fail_if_refused
from loadgen.base.refusal import listed_addresses as listed_addresses
from loadgen.base.refusal import url_addresses as url_addresses
from loadgen.base.tls_check import client_context as client_context
from loadgen.base.tls_check import tls_verify_problem as tls_verify_problem
from loadgen.driver_api.driver_spec import DriverSpec

ENTRY_POINT_GROUP = "loadgen.drivers"
log = logging.getLogger("loadgen.driver_api")

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


class PrefixedDeliveries(Protocol):
    """Records deliveries straight from payloads that start with loadgen's stamp
    (:mod:`loadgen.driver_api.stamp`): the engine's recorders, in C one call per delivery or per
    batch, where a driver would otherwise unpack each stamp and call ``on_message``."""

    def on_prefixed(self, payload: bytes, partition: int) -> bool:
        """Record ``payload`` if it carries the stamp; False (nothing recorded) if not."""
        ...

    def on_prefixed_many(self, payloads: list, start: int, partition: int) -> int:
        """Record ``payloads[start:]`` up to the first without the stamp; return its index
        (``len(payloads)`` when every one had it)."""
        ...


def prefixed_deliveries(on_message: OnMessage) -> PrefixedDeliveries | None:
    """The recorder behind ``on_message`` when it reads the stamp prefix itself, else ``None``
    (a consumer delay wraps the recorder; a test passes its own callback). A driver whose client
    hands over payload bytes offers each delivery to it first and calls ``on_message`` for the
    ones it declines (no prefix: a short payload, another carrier, a foreign message)."""
    recorder = getattr(on_message, "__self__", None)
    return recorder if hasattr(recorder, "on_prefixed_many") else None


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


@dataclass(frozen=True)
class LocalStarter:
    """A local broker a driver declares: ``starter`` names, as ``"module:callable"``, a function
    ``(port, folder, *, detach=False) -> LocalBroker`` (``None`` for a free port and a temporary
    folder; :mod:`loadgen.driver_api.local.process` has the parts to write one), imported only when
    that broker is started; ``port`` is the one ``loadgen brokers up`` uses by default. The
    broker is for development and tests: its quirks stay in the ``driver_config`` it returns,
    never in the driver's defaults."""

    starter: str
    port: int


@runtime_checkable
class Producer(Protocol):
    """One client producer on one topic; it may also be a :class:`PrefixedProducer` and a
    :class:`TransactionalProducer`."""

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        """Hand one message to the client without blocking (unless the producer is a
        :class:`BlockingSends`); ``on_done`` reports its fate.

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


class Slot(Enum):
    """Where :class:`PrefixedSend` puts each message's own arguments."""

    VALUE = "value"
    KEY = "key"
    ACK = "ack"


VALUE, KEY, ACK = Slot.VALUE, Slot.KEY, Slot.ACK


def reraise(error: BaseException, key: bytes | None, value: bytes, on_done: OnDone) -> None:
    """The default :attr:`PrefixedSend.resend`: a call that raised ends the run."""
    raise error


@dataclass(frozen=True, slots=True)
class PrefixedSend:
    """A client call the producer loop makes itself, with a payload it stamped.

    Per message the loop calls ``call(*args)`` with :data:`VALUE` in ``args`` replaced by the
    payload whose first 32 bytes carry the stamp (:mod:`loadgen.driver_api.stamp`), :data:`KEY` by
    the key (or ``None``) and :data:`ACK` by the message's ``on_done``; the other arguments are
    passed as they are. ``args`` holds :data:`VALUE` and :data:`KEY` once each and :data:`ACK`
    at most once: without it, the message is acknowledged when ``call`` returns.

    When ``call`` raises, the loop calls ``resend(error, key, value, on_done)`` for that message,
    on its own thread, then goes on with the next: ``resend`` sends the message another way
    (Kafka waits for room in a full queue) and ``on_done`` is then called once, or it raises,
    which ends the run. Payloads shorter than the prefix, readiness probes and every message of
    a loop that is not compiled (or runs with ``LOADGEN_PURE_PYTHON=1``) go through ``send``.
    """

    call: Callable[..., object]
    args: tuple[object, ...]
    resend: Callable[[BaseException, bytes | None, bytes, OnDone], None] = reraise


@runtime_checkable
class PrefixedProducer(Protocol):
    """A producer that takes payloads the producer loop stamped (optional)."""

    def prefixed_send(self) -> PrefixedSend | None:
        """The call to make per message; ``None``: the loop calls ``send`` as usual. Asked once
        per producer when the loop starts; the loop sends directly only if every one of its
        producers answers with a call."""


@dataclass(frozen=True, slots=True)
class TransactionSample:
    """What a transactional producer did since it was last asked."""

    committed_ns: tuple[int, ...] = ()
    """How long each commit call took, in ns: one value per committed transaction."""
    aborted_ns: tuple[int, ...] = ()
    """How long each abort call took, in ns: one value per aborted transaction (on purpose or
    after a failure)."""
    withdrawn: tuple[int, ...] = ()
    """The message ids of the messages in transactions aborted on purpose. Their ``on_done`` is
    never called: they are neither acknowledged nor failed, and a consumer that reads one has
    read an aborted message (the accounting counts it)."""


@runtime_checkable
class TransactionalProducer(Protocol):
    """A producer that writes in transactions (optional). Its messages are acknowledged when
    their transaction commits; a transaction that fails reports its error to each message's
    ``on_done``."""

    def take_transactions(self) -> TransactionSample:
        """Everything since the last call (called from the stats thread, once per interval)."""
        ...


@dataclass(frozen=True, slots=True)
class TopicScaling:
    """How the broker re-partitioned one topic while the run used it."""

    topic: str
    partitions_created: int
    partitions_at_end: int
    scalings: int
    """Re-partitionings since the topic was created (a Pravega stream's epoch: a split or a
    merge of its segments is one each); 0: the topic kept the partitions it was created with."""

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partitionsCreated": self.partitions_created,
            "partitionsAtEnd": self.partitions_at_end,
            "scalings": self.scalings,
        }


@runtime_checkable
class ScalingTopics(Protocol):
    """A driver whose broker can re-partition a topic during a run (optional): Pravega scales a
    stream with an auto-scaling policy. The result says what became of each topic."""

    def topic_scaling(self, names: list[str]) -> list[TopicScaling]:
        """The topics of ``names`` this driver created, as the broker has them now. Asked once by
        the worker that created them, after the run's reads and before they are deleted."""
        ...


class BlockingSends:
    """A producer whose ``send`` may wait for the broker (a transaction committed in the send):
    the producer loop checks its stop flag after each of its messages, not after a burst of
    up to 512, so a stop is not followed by a burst of round trips that eat the drain."""


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


@runtime_checkable
class Backlog(Protocol):
    """A consumer that can ask its broker what its subscription has yet to read (optional)."""

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """Messages waiting for the subscription, per partition or queue (a key two consumers
        of one subscription share when they count the same thing); ``None`` when the broker did
        not answer within ``timeout_s``. Asked once, after the run's drain: a consumer may stop
        consuming to count exactly (every message either received or counted here)."""


class BaseDriver(ABC):
    """One broker connection configuration, as read from a driver YAML; every driver subclasses it.

    The abstract methods are the broker work. The class members with defaults say what the
    engine must know about the broker without connecting (URL schemes, OMB class names, client
    distributions, probe settings); the engine reads them from the class the entry point names,
    for every installed driver (to find the owner of a URL scheme or an OMB ``driverClass``). So
    that class must import no broker client: :meth:`implementation` imports the class that does
    the work, and with it the client, so ``loadgen probe kafka://`` never pays for, or fails on,
    another driver's client. A driver with no client to import defines :meth:`validate_config`
    and :meth:`from_config` itself.
    """

    spec: DriverSpec

    display_name: ClassVar[str] = ""
    """The name a URL run or probe shows (``Kafka``); empty: the registered name, capitalized."""
    url_schemes: ClassVar[tuple[str, ...]] = ()
    """URL schemes this driver answers (``loadgen probe SCHEME://...``, ``loadgen run URL``)."""
    omb_driver_classes: ClassVar[tuple[str, ...]] = ()
    """OMB ``driverClass`` values a driver file may select this driver by."""
    client_distributions: ClassVar[tuple[str, ...]] = ()
    """Distributions (as pip names them) whose versions a result records (``clientVersions``)."""
    process_local: ClassVar[bool] = False
    """True when the broker lives inside the process (the memory driver): a run over several
    processes must keep each topic's producers and consumers in one of them."""
    run_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    """Driver-file fields a URL run (``loadgen run URL``) starts from without a ``-d`` file."""
    probe_defaults: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    """Driver-file fields ``loadgen probe URL`` starts from without a ``-d`` file."""
    probe_named_topics: ClassVar[bool] = False
    """True when probing a topic given by name (``probe --topic``), which the probe keeps, leaves
    nothing behind on the broker (no queue or subscription outlives the probe)."""
    local_broker: ClassVar[LocalStarter | None] = None
    """How ``loadgen brokers up KIND`` (and the pytest plugin) starts a broker of this kind on
    127.0.0.1; ``None``: it has none."""
    secured_local_broker: ClassVar[LocalStarter | None] = None
    """The same behind TLS and a checked login (``loadgen brokers up KIND --secure``)."""
    upstream_local_broker: ClassVar[LocalStarter | None] = None
    """The broker project's own server, where the usual local broker is a stand-in
    (``loadgen brokers up KIND --upstream``); its starter also takes ``nodes`` (a cluster on
    one host) and writes a driver file."""
    secured_upstream_local_broker: ClassVar[LocalStarter | None] = None
    """The project's own server with its own TLS and login (``--upstream --secure``)."""
    secret_fields: ClassVar[tuple[str, ...]] = ()
    """Names (or parts of names: ``sasl.jaas``) of driver-file fields and client properties
    whose values are secrets, beyond any name with ``password``, ``secret``, ``token``,
    ``credential`` or ``private`` in it: redacted from results, printed files and errors."""
    config_model: ClassVar[str] = ""
    """``"module:Class"`` of the pydantic model of the driver's own section of a driver file (the
    field reference is generated from it, with the driver's client installed). Empty: the
    driver documents its fields itself."""

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """Driver-file fields for ``url``: ``config`` (from ``-d`` or the defaults above) with the
        URL's address in its place. Called only for a scheme in :attr:`url_schemes`."""
        raise ConfigError(
            f"the {cls.__name__} driver takes no URL",
            path="URL",
            value=url,
            allowed="a driver file (-d)",
        )

    @classmethod
    def probe_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """What a probe changes in any config, from a file or not (Kafka: read from the end)."""
        return dict(config)

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        """The class whose :meth:`validate_config` and :meth:`from_config` do the work: a light
        registered class imports its implementation (and with it the client) here."""
        return cls

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> object:
        """Check the broker section of ``spec`` without connecting (``loadgen validate``);
        unknown keys raise :class:`ConfigError`."""
        return cls._implementation("validate_config").validate_config(spec)

    @classmethod
    def from_config(cls, spec: DriverSpec) -> BaseDriver:
        """The driver for ``spec``, validated as :meth:`validate_config` does; not connected yet."""
        return cls._implementation("from_config").from_config(spec)

    @classmethod
    def _implementation(cls, method: str) -> type[BaseDriver]:
        implementation = cls.implementation()
        if implementation is cls:  # neither overridden here nor handed over
            raise NotImplementedError(f"{cls.__qualname__} must define {method} or implementation")
        return implementation

    @property
    def topic_name_prefix(self) -> str:
        """Generated topic names start with this (``test-topic-0001...``)."""
        return "test-topic"

    @abstractmethod
    def check_reachable(self, timeout_s: float) -> None:
        """Raise :class:`loadgen.base.errors.BrokerUnreachable` (naming the address) if it is down,
        within ``timeout_s``. Call :func:`fail_if_refused` first with the addresses the client
        will connect to (:func:`listed_addresses`, :func:`url_addresses` read them): a port
        where nothing listens is then reported at once, not after the client's retries. A
        refused login is :class:`loadgen.base.errors.BrokerLoginRefused`, a failed TLS handshake
        :class:`loadgen.base.errors.BrokerTlsFailed` (:func:`tls_verify_problem` says why)."""

    @abstractmethod
    def create_topics(self, topics: list[TopicSpec]) -> None:
        """Create ``topics``; one that exists already is used as it is."""

    def adopt_topics(self, topics: list[TopicSpec]) -> None:  # noqa: B027 (optional)
        """Learn about topics another worker created, creating nothing on the broker (RabbitMQ:
        their partition count). Default: nothing to learn."""

    @abstractmethod
    def delete_topics(self, names: list[str]) -> None:
        """Delete the run's topics (the worker that created them calls this)."""

    def delete_subscriptions(self, names: list[str]) -> None:  # noqa: B027 (optional)
        """Delete what this driver created to consume the topics ``names`` (RabbitMQ queues,
        Pravega reader groups), when another worker deletes the topics. Default: nothing."""

    def partition_leader(self, topic: str, partition: int) -> str | None:
        """The address (``host:port``) of the node leading ``partition`` of ``topic``, for a
        fault aimed at the ``leader``; ``None`` where the broker has no leaders or does not say.
        Default: ``None``."""
        return None

    @abstractmethod
    def create_producer(self, topic: str) -> Producer: ...

    @abstractmethod
    def create_consumer(self, topic: str, subscription: str, on_message: OnMessage) -> Consumer:
        """Subscribe ``subscription`` to ``topic``; return once the consumer is receiving."""

    @abstractmethod
    def close(self) -> None: ...


def require_address(url: str) -> str:
    """The address part of a broker URL (``host:port``, with any user info); :class:`ConfigError`
    for a URL without one. For drivers' :meth:`BaseDriver.config_from_url`."""
    parts = urlsplit(url)
    if not parts.netloc:
        raise ConfigError(
            "not a broker URL", path="URL", value=url, allowed=[f"{parts.scheme}://host:port"]
        )
    return parts.netloc


class ForeignMessages:
    """Counts the messages a consumer skips because loadgen did not send them (no well-formed
    stamp), and logs the first one: a shared topic is no reason to fail a run, but a silent
    skip would hide a mix-up."""

    def __init__(self, log: logging.Logger, expected: str) -> None:
        """``expected`` says what a loadgen message carries (``an lg-stamp header``)."""
        self._log = log
        self._expected = expected
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
        if self.count == 1:
            self._log.warning("skipping messages without %s (not sent by loadgen)", self._expected)


def available_drivers() -> dict[str, str]:
    """Installed driver names mapped to their entry-point targets."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def driver_classes() -> dict[str, type[BaseDriver]]:
    """Every installed driver class by its registered name (cheap: they import no client).

    One that fails to load is left out with a warning: a broken package must not take every
    other driver's URLs and OMB classes with it (selecting it by name still fails, loudly)."""
    found = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found[ep.name] = _loaded(ep)
        except Exception as error:
            log.warning("driver %r (%s) cannot be loaded: %s", ep.name, ep.value, error)
    return found


def _loaded(entry_point: EntryPoint) -> type[BaseDriver]:
    """The driver class an entry point names, its secret fields known to redaction from now on."""
    driver = entry_point.load()
    declare_secrets(driver.secret_fields)
    return driver


def display_name(kind: str, driver: type[BaseDriver]) -> str:
    return driver.display_name or kind.capitalize()


def load_driver_class(spec: DriverSpec) -> type[BaseDriver]:
    """The registered driver class for ``spec.kind``."""
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec.kind:
            return _loaded(ep)
    raise ConfigError(
        f"unknown driver {spec.kind!r}",
        file=spec.source,
        path="driver",
        value=spec.kind,
        allowed=sorted(available_drivers()),
    )


def open_driver(spec: DriverSpec) -> BaseDriver:
    """Instantiate the driver that ``spec`` selects; a config error it finds names the driver
    file it came from."""
    try:
        return load_driver_class(spec).from_config(spec)
    except ConfigError as error:
        error.file = error.file or spec.source
        raise
