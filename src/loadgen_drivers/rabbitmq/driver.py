"""The RabbitMQ driver on pika: routing keys as partitions, async confirms, prefetch.

* Topic = a durable exchange (``exchangeType``, direct by default); partitions = routing keys
  ``"0" … "N-1"``; each subscription gets one queue per partition (:mod:`.topology`). A message
  key picks the partition by CRC-32, no key (``NO_KEY``) round-robins over them.
* Send time, message id and intended send time: one 24-byte header ``lg-stamp``
  (:mod:`.producer`). ``on_message`` gets the index of the partition whose queue the message
  was read from (:mod:`.consumer`).
* Producers publish with asynchronous confirms on an event loop stepped by the producer loop's
  own thread (:mod:`.pump`); consumers each run their own connection on their own thread.
* Every producer and consumer has a channel of its own; ``producersPerConnection`` /
  ``consumersPerConnection`` (default 1) say how many share a connection (OMB: all of them, one
  connection per URI). Consumers sharing a connection share its loop thread. Topics go to the
  ``amqpUris`` by CRC-32 of the topic name, the same on every worker.
* Creation is paced like OMB: after every ``*CreationBatchSize`` producers (consumers), wait
  ``*CreationDelay`` ms, so hundreds of connections do not open at once.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit
from zlib import crc32

import pika
from pika.exceptions import AMQPError, ChannelClosed, ProbableAuthenticationError

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, DriverError
from loadgen.driver_api import OnMessage, TopicSpec, fail_if_refused, url_addresses
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import parse_model
from loadgen_drivers.rabbitmq import Driver
from loadgen_drivers.rabbitmq.config import (
    RabbitMqConfig,
    check_uris,
    connection_parameters,
    mask_password,
)
from loadgen_drivers.rabbitmq.connection import LoopThread, SharedConnection
from loadgen_drivers.rabbitmq.consumer import RabbitConsumer
from loadgen_drivers.rabbitmq.producer import RabbitProducer
from loadgen_drivers.rabbitmq.pump import Pump
from loadgen_drivers.rabbitmq.topology import (
    check_partitions,
    queue_arguments,
    queue_names,
    routing_keys,
)

log = logging.getLogger("loadgen.rabbitmq")

DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671}
ADMIN_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 5.0


def quiet_pika() -> None:
    """pika logs every connection step at INFO and every failed attempt at ERROR with a
    traceback; this driver reports each failure itself, with the (masked) URI, so pika speaks
    only when loadgen's own log is at debug level (``-vv``)."""
    debug = log.isEnabledFor(logging.DEBUG)
    logging.getLogger("pika").setLevel(logging.NOTSET if debug else logging.CRITICAL)


@dataclass
class CreationPacing:
    """OMB's creation pacing: before every ``batch_size``-th client after the first batch,
    wait ``delay_ms``, so hundreds of connections do not open at once."""

    batch_size: int
    delay_ms: int
    started: int = 0

    def next(self) -> None:
        if self.delay_ms and self.started and self.started % self.batch_size == 0:
            time.sleep(self.delay_ms / 1000)
        self.started += 1


class RabbitMqDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: RabbitMqConfig) -> None:
        self.spec = spec
        self.config = config
        self._partitions: dict[str, int] = {}
        self._queues: dict[str, set[str]] = {}
        self._pump: Pump | None = None
        self._producer_connections: list[SharedConnection] = []
        self._consumer_connections: list[tuple[LoopThread, SharedConnection]] = []
        self._producer_pacing = CreationPacing(
            config.producer_creation_batch_size, config.producer_creation_delay_ms
        )
        self._consumer_pacing = CreationPacing(
            config.consumer_creation_batch_size, config.consumer_creation_delay_ms
        )

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> RabbitMqConfig:
        config = parse_model(
            RabbitMqConfig, dict(spec.config), file=spec.source, lenient=spec.lenient
        )
        check_uris(config, spec.source)
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> RabbitMqDriver:
        quiet_pika()
        return cls(spec, cls.validate_config(spec))

    @property
    def topic_name_prefix(self) -> str:
        return self.config.topic_prefix

    def _uri_for(self, topic: str) -> str:
        uris = self.config.amqp_uris
        return uris[crc32(topic.encode()) % len(uris)]

    def _blocking(self, uri: str, timeout_s: float) -> pika.BlockingConnection:
        try:
            return pika.BlockingConnection(connection_parameters(uri, timeout_s, self.config.tls))
        except ProbableAuthenticationError as error:
            user = urlsplit(uri).username
            raise BrokerLoginRefused("rabbitmq", mask_password(uri), user, repr(error)) from None
        except AMQPError as error:  # a TLS alert from the server comes as a lost stream
            detail = repr(error)
            if "SSL" in detail:  # SSLError with the alert, or SSLEOFError when it is lost
                raise BrokerTlsFailed("rabbitmq", mask_password(uri), detail) from None
            raise BrokerUnreachable("rabbitmq", mask_password(uri), detail) from None
        except ssl.SSLError as error:  # pika lets the client's own verdict through unwrapped
            raise BrokerTlsFailed("rabbitmq", mask_password(uri), str(error)) from None

    def check_reachable(self, timeout_s: float) -> None:
        """Every URI is used (topics are spread over them), so each must answer within
        ``timeout_s``. pika gives up on a refused connection at once too (one attempt), but
        its error says less than :func:`fail_if_refused`'s."""
        for uri in self.config.amqp_uris:
            started = time.monotonic()
            port = DEFAULT_PORTS[urlsplit(uri).scheme]  # check_uris accepted these two only
            fail_if_refused("rabbitmq", mask_password(uri), url_addresses(uri, port), timeout_s)
            left = max(timeout_s - (time.monotonic() - started), 0.001)
            self._blocking(uri, left).close()

    def adopt_topics(self, topics: list[TopicSpec]) -> None:
        """Exchanges another worker declared: only their partition (routing key) count is
        needed here."""
        for topic in topics:
            self._partitions[topic.name] = topic.partitions

    def create_topics(self, topics: list[TopicSpec]) -> None:
        exchange_type = self.config.exchange_type
        for topic in topics:
            check_partitions(exchange_type, topic.partitions, self.spec.source)
        by_uri: dict[str, list[TopicSpec]] = {}
        for topic in topics:
            by_uri.setdefault(self._uri_for(topic.name), []).append(topic)
        for uri, group in by_uri.items():
            connection = self._blocking(uri, ADMIN_TIMEOUT_S)
            try:
                channel = connection.channel()
                for topic in group:
                    channel.exchange_declare(topic.name, exchange_type.value, durable=True)
                    self._partitions[topic.name] = topic.partitions
            except ChannelClosed as error:
                raise DriverError("rabbitmq", f"declaring exchanges: {error!r}") from None
            finally:
                connection.close()
        log.info("declared %d exchanges", len(topics))

    def delete_topics(self, names: list[str]) -> None:
        self._delete(names, exchanges=True)

    def delete_subscriptions(self, names: list[str]) -> None:
        """The queues this driver declared for ``names``; the exchanges stay (another worker
        of the run declared them and deletes them)."""
        self._delete(names, exchanges=False)

    def _delete(self, names: list[str], *, exchanges: bool) -> None:
        by_uri: dict[str, list[str]] = {}
        for name in names:
            by_uri.setdefault(self._uri_for(name), []).append(name)
        for uri, group in by_uri.items():
            try:
                connection = self._blocking(uri, ADMIN_TIMEOUT_S)
            except (BrokerUnreachable, BrokerLoginRefused, BrokerTlsFailed, DriverError) as error:
                log.warning("cannot delete %d exchanges and their queues: %s", len(group), error)
                continue
            try:
                channel = connection.channel()
                for name in group:
                    for queue in sorted(self._queues.pop(name, ())):
                        channel.queue_delete(queue)
                    if exchanges:
                        channel.exchange_delete(name)
                    self._partitions.pop(name, None)
            except AMQPError as error:
                log.warning("deleting exchanges failed: %r", error)
            finally:
                if connection.is_open:
                    connection.close()

    def _partitions_of(self, topic: str) -> int:
        try:
            return self._partitions[topic]
        except KeyError:
            raise DriverError(
                "rabbitmq",
                f"topic {topic!r} was not created by this driver; its partitions are unknown",
            ) from None

    def create_producer(self, topic: str) -> RabbitProducer:
        self._producer_pacing.next()
        partitions = self._partitions_of(topic)
        pump, connection = self._producer_connection(self._uri_for(topic))
        return RabbitProducer(pump, connection, topic, partitions, self.config)

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> RabbitConsumer:
        config = self.config
        self._consumer_pacing.next()
        partitions = self._partitions_of(topic)
        queues = queue_names(topic, subscription, partitions)
        self._queues.setdefault(topic, set()).update(queues)
        loop_thread, connection = self._consumer_connection(self._uri_for(topic))
        return RabbitConsumer(
            loop_thread,
            connection,
            topic,
            list(zip(queues, routing_keys(partitions), strict=True)),
            queue_arguments(config.queue_type),
            config.prefetch,
            config.auto_ack,
            on_message,
        )

    def _producer_connection(self, uri: str) -> tuple[Pump, SharedConnection]:
        """A producer connection to ``uri`` with a free channel slot, opened when none has one."""
        if self._pump is None:
            self._pump = Pump()
        pump = self._pump
        address = mask_password(uri)
        for connection in self._producer_connections:
            if connection.address == address and connection.has_room:
                return pump, connection
        connection = SharedConnection(
            connection_parameters(uri, CONNECT_TIMEOUT_S, self.config.tls),
            address,
            pump.loop,
            pump.wake,
            self.config.producers_per_connection,
            self.config.recovery_interval_ms / 1000,
        )
        opened = pump.run_until(
            lambda: connection.is_open or connection.failure is not None, CONNECT_TIMEOUT_S
        )
        _raise_unless_open(connection, opened)
        self._producer_connections.append(connection)
        return pump, connection

    def _consumer_connection(self, uri: str) -> tuple[LoopThread, SharedConnection]:
        """A consumer connection (on its own loop thread) to ``uri`` with a free channel slot."""
        address = mask_password(uri)
        for loop_thread, connection in self._consumer_connections:
            if connection.address == address and connection.has_room and loop_thread.alive:
                return loop_thread, connection
        loop_thread = LoopThread(f"rabbitmq-consumers-{len(self._consumer_connections)}")
        made: list[SharedConnection] = []
        answered = threading.Event()

        def on_change() -> None:  # opened, failed or closed
            answered.set()
            if made[0].is_closed:
                loop_thread.loop.stop()  # the last consumer released it: the thread ends

        def connect() -> None:  # on the loop thread, which owns the connection
            made.append(
                SharedConnection(
                    connection_parameters(uri, CONNECT_TIMEOUT_S, self.config.tls),
                    address,
                    loop_thread.loop,
                    on_change,
                    self.config.consumers_per_connection,
                    self.config.recovery_interval_ms / 1000,
                )
            )

        loop_thread.call(connect)
        opened = answered.wait(CONNECT_TIMEOUT_S)
        connection = made[0]
        try:
            _raise_unless_open(connection, opened and connection.is_open)
        except DriverError:
            loop_thread.call(loop_thread.loop.stop)
            raise
        self._consumer_connections.append((loop_thread, connection))
        return loop_thread, connection

    def close(self) -> None:
        """Close the connections clients left open, then the loops they ran on."""
        for loop_thread, connection in self._consumer_connections:
            if loop_thread.call(connection.close):  # its thread ends once it has closed
                loop_thread.join(CLOSE_TIMEOUT_S)
        pump = self._pump
        if pump is not None:
            for connection in self._producer_connections:
                connection.close()
            pump.run_until(
                lambda: all(c.is_closed for c in self._producer_connections), CLOSE_TIMEOUT_S
            )
            pump.close()
            self._pump = None
        self._consumer_connections = []
        self._producer_connections = []


def _raise_unless_open(connection: SharedConnection, opened: bool) -> None:
    if connection.failure is not None:
        raise connection.failure
    if not opened:
        connection.close()
        raise DriverError(
            "rabbitmq", f"no connection to {connection.address} within {CONNECT_TIMEOUT_S:.0f} s"
        )
