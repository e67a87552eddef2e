"""The NATS JetStream driver on nats-py.

* Topic = a stream named after the topic (``.``, ``*``, ``>``, whitespace and slashes become
  ``_``) holding subjects ``<stream>.0`` … ``<stream>.N-1``, one per partition (:mod:`.naming`).
  A message key picks the partition by CRC-32, no key (``NO_KEY``) round-robins.
* Subscription = a durable pull consumer ``durable-<subscription>`` with ``AckPolicy.ALL``,
  delivering new messages; the consumers of a subscription pull from it and so compete
  (:mod:`.consumer`). Backlogs are counted from its consumer info (:class:`Backlog`).
* Producers publish asynchronously with a window of ``maxPending`` (:mod:`.producer`); the
  stamp is in the payload's prefix, or an ``lg-stamp`` header for a short payload (:mod:`.stamp`).
* One connection and one event-loop thread per driver
  (:mod:`loadgen.driver_api.loop_thread`) carry the admin calls, every producer and every
  consumer.
"""

from __future__ import annotations

import logging

from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, NotFoundError

from loadgen.base.errors import ConfigError, DriverError
from loadgen.driver_api import OnMessage, TopicSpec, fail_if_refused, url_addresses
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.loop_thread import LoopThread
from loadgen.spec import parse_model
from loadgen_drivers.nats import Driver
from loadgen_drivers.nats.config import DEFAULT_PORT, NatsConfig
from loadgen_drivers.nats.config import StorageType as ConfigStorage
from loadgen_drivers.nats.connection import connect, shown_servers, tls_context
from loadgen_drivers.nats.consumer import ACK_WAIT_S, NatsConsumer
from loadgen_drivers.nats.naming import durable_name, stream_filter, stream_name
from loadgen_drivers.nats.producer import NatsProducer

log = logging.getLogger("loadgen.nats")

CONNECT_TIMEOUT_S = 15.0
ADMIN_TIMEOUT_S = 15.0
CLOSE_TIMEOUT_S = 5.0
STREAM_IN_USE = 10058
"""JetStream's error code for a stream that exists with another configuration."""
NO_REPLICAS_HERE = 10074
"""JetStream's error code for replicas > 1 on a server that is not part of a cluster."""


class NatsDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: NatsConfig) -> None:
        self.spec = spec
        self.config = config
        self._partitions: dict[str, int] = {}
        self._durables: dict[str, set[str]] = {}
        self._thread: LoopThread | None = None
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._replicas = config.replication_factor or 1

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> NatsConfig:
        config = parse_model(NatsConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)
        try:
            tls_context(config)
        except OSError as error:  # ssl.SSLError too
            raise ConfigError(
                f"TLS files: {error}", file=spec.source, path="tls", value=config.tls,
                allowed="readable PEM files",
            ) from None  # fmt: skip
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> NatsDriver:
        return cls(spec, cls.validate_config(spec))

    @property
    def topic_name_prefix(self) -> str:
        return "test-topic"

    # -- connection -----------------------------------------------------------------------------
    def check_reachable(self, timeout_s: float) -> None:
        """Some server in ``natsHostUrl`` must take a connection (nats-py uses the first that
        does) with JetStream on, within ``timeout_s``."""
        addresses = [a for url in self.config.servers for a in url_addresses(url, DEFAULT_PORT)]
        fail_if_refused("nats", shown_servers(self.config), addresses, timeout_s)
        thread = LoopThread("nats-check")
        try:
            thread.run(self._check(timeout_s), timeout_s + 1.0)
        finally:
            thread.stop()

    async def _check(self, timeout_s: float) -> None:
        nc = await connect(self.config, timeout_s, reconnect=False)
        try:
            await nc.jetstream(timeout=timeout_s).account_info()
        except Exception as error:
            raise DriverError(
                "nats", f"JetStream does not answer on {shown_servers(self.config)} (is it "
                f"enabled? nats-server -js): {error!r}",
            ) from None  # fmt: skip
        finally:
            await nc.close()

    def _connection(self) -> tuple[LoopThread, Client, JetStreamContext]:
        if self._thread is None:
            self._thread = LoopThread("nats-loop")
            nc = self._thread.run(
                connect(self.config, CONNECT_TIMEOUT_S, reconnect=True), CONNECT_TIMEOUT_S + 1.0
            )
            self._nc, self._js = nc, nc.jetstream(timeout=ADMIN_TIMEOUT_S)
        assert self._nc is not None and self._js is not None
        return self._thread, self._nc, self._js

    def _admin(self, coroutine) -> object:
        thread, _, _ = self._connection()
        return thread.run(coroutine, ADMIN_TIMEOUT_S + 1.0)

    # -- topics ---------------------------------------------------------------------------------
    def adopt_topics(self, topics: list[TopicSpec]) -> None:
        """Streams another worker created: only their partition count is needed here."""
        for topic in topics:
            self._partitions[topic.name] = topic.partitions

    def create_topics(self, topics: list[TopicSpec]) -> None:
        _, _, js = self._connection()
        for topic in topics:
            self._admin(self._add_stream(js, topic.name))
            self._partitions[topic.name] = topic.partitions
        log.info("created %d streams", len(topics))

    async def _add_stream(self, js: JetStreamContext, topic: str) -> None:
        config = self.config
        storage = StorageType.MEMORY if config.storage_type is ConfigStorage.MEMORY else None
        stream = StreamConfig(
            name=stream_name(topic),
            subjects=[stream_filter(topic)],
            storage=storage or StorageType.FILE,
            num_replicas=self._replicas,
            max_bytes=config.max_bytes,
        )
        try:
            await js.add_stream(stream)
        except APIError as error:
            if error.err_code == NO_REPLICAS_HERE and self._replicas > 1:
                log.warning(
                    "replicationFactor %d: the server is not part of a cluster, so streams "
                    "get one replica", self._replicas,
                )  # fmt: skip
                self._replicas = 1
                await self._add_stream(js, topic)
            elif error.err_code == STREAM_IN_USE:
                log.info("stream %s exists with another configuration: used as it is", topic)
            else:
                raise DriverError("nats", f"creating stream {stream.name}: {error}") from None

    def delete_topics(self, names: list[str]) -> None:
        self._delete(names, streams=True)

    def delete_subscriptions(self, names: list[str]) -> None:
        """The durable consumers this driver created on ``names``; the streams stay (another
        worker of the run created them and deletes them)."""
        self._delete(names, streams=False)

    def _delete(self, names: list[str], *, streams: bool) -> None:
        try:
            _, _, js = self._connection()
        except Exception as error:
            log.warning("cannot delete %d streams or their consumers: %s", len(names), error)
            return
        for name in names:
            durables = sorted(self._durables.pop(name, ()))
            try:
                self._admin(self._remove(js, stream_name(name), durables, streams))
            except Exception as error:
                log.warning("deleting stream %s or its consumers failed: %r", name, error)
            self._partitions.pop(name, None)

    @staticmethod
    async def _remove(js: JetStreamContext, stream: str, durables: list[str], whole: bool) -> None:
        try:
            if whole:
                await js.delete_stream(stream)  # its consumers go with it
                return
            for durable in durables:
                await js.delete_consumer(stream, durable)
        except NotFoundError:
            pass

    def _partitions_of(self, topic: str) -> int:
        try:
            return self._partitions[topic]
        except KeyError:
            raise DriverError(
                "nats",
                f"topic {topic!r} was not created by this driver; its partitions are unknown",
            ) from None

    # -- clients --------------------------------------------------------------------------------
    def create_producer(self, topic: str) -> NatsProducer:
        partitions = self._partitions_of(topic)
        thread, nc, _ = self._connection()
        return NatsProducer(thread, nc, topic, partitions, self.config)

    def create_consumer(self, topic: str, subscription: str, on_message: OnMessage) -> NatsConsumer:
        self._partitions_of(topic)
        thread, nc, js = self._connection()
        stream, durable = stream_name(topic), durable_name(subscription)
        consumer = ConsumerConfig(
            durable_name=durable,
            ack_policy=AckPolicy.ALL,
            deliver_policy=DeliverPolicy.NEW,
            ack_wait=ACK_WAIT_S,
            max_ack_pending=self.config.max_ack_pending,
        )
        try:
            thread.run(js.add_consumer(stream, consumer), ADMIN_TIMEOUT_S)
        except APIError as error:
            raise DriverError("nats", f"creating consumer {durable} on {stream}: {error}") from None
        self._durables.setdefault(topic, set()).add(durable)
        return NatsConsumer(thread, nc, js, stream, durable, self.config, on_message)

    def close(self) -> None:
        thread, nc = self._thread, self._nc
        self._thread = self._nc = self._js = None
        if thread is None:
            return
        if nc is not None:
            try:
                thread.run(nc.close(), CLOSE_TIMEOUT_S)
            except Exception as error:
                log.debug("closing the connection: %r", error)
        thread.stop()
