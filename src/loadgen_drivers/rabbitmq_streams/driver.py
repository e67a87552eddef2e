"""The RabbitMQ Streams driver on rstream: streams per partition, confirms, server-side offsets.

* Topic with N partitions = the streams ``<topic>-0 … <topic>-N-1``: plain streams, or (with
  ``superStream``) the partitions of the super stream ``<topic>``, named as RabbitMQ names
  them. Each is created with ``max-length-bytes`` and ``stream-max-segment-size-bytes``.
  A key picks the partition by CRC-32, no key round-robins (:mod:`.producer`).
* Send time, message id and intended send time: the payload's first 32 bytes (:mod:`.carrier`).
* Subscription = a reader per driver that every consumer of the subscription shares, its
  offset tracked on the server under the subscription's name (:mod:`.consumer`).
* Clients live on two asyncio loops on threads the driver owns
  (:mod:`loadgen.driver_api.loop_thread`), one for the producers, which hand it batches, and
  one for the consumers, which get whole chunks.
* A topic's streams are created through the URI that CRC-32 of its name picks; producers and
  consumers connect to each stream's leader as its node advertises it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar
from zlib import crc32

from rstream import exceptions
from rstream.client import Client

from loadgen.base.errors import DriverError
from loadgen.driver_api import OnMessage, TopicSpec, fail_if_refused
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.loop_thread import LoopThread
from loadgen.spec import parse_model
from loadgen_drivers.rabbitmq_streams import Driver
from loadgen_drivers.rabbitmq_streams.config import (
    Endpoint,
    StreamsConfig,
    check_uris,
    stream_arguments,
)
from loadgen_drivers.rabbitmq_streams.connection import (
    KIND,
    failure,
    leader_endpoint,
    open_client,
)
from loadgen_drivers.rabbitmq_streams.consumer import StreamConsumer, SubscriptionReader
from loadgen_drivers.rabbitmq_streams.producer import StreamProducer

log = logging.getLogger("loadgen.rabbitmq_streams")
T = TypeVar("T")

ADMIN_TIMEOUT_S = 30.0
SUPER_STREAM_CREATION = (3, 13)
"""The first RabbitMQ whose stream protocol creates and deletes super streams."""


def partition_streams(topic: str, partitions: int) -> list[str]:
    """The streams of a topic: a super stream's partitions are named so by RabbitMQ too."""
    return [f"{topic}-{index}" for index in range(partitions)]


def server_version(client: Client) -> tuple[int, ...]:
    text = (client.server_properties or {}).get("version", "0")
    numbers = []
    for part in text.split("."):
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits or 0))
    return tuple(numbers)


class StreamsDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: StreamsConfig, endpoints: list[Endpoint]) -> None:
        self.spec = spec
        self.config = config
        self._endpoints = endpoints
        self._context = config.tls.context() if any(e.tls for e in endpoints) else None
        self._loop: LoopThread | None = None
        self._consumer_loop: LoopThread | None = None
        self._partitions: dict[str, int] = {}
        self._leaders: dict[str, list[tuple[str, Endpoint]]] = {}
        self._producers: list[StreamProducer] = []
        self._readers: dict[tuple[str, str], SubscriptionReader] = {}

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> StreamsConfig:
        config = parse_model(
            StreamsConfig, dict(spec.config), file=spec.source, lenient=spec.lenient
        )
        check_uris(config, spec.source)
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> StreamsDriver:
        config = cls.validate_config(spec)
        return cls(spec, config, check_uris(config, spec.source))

    @property
    def topic_name_prefix(self) -> str:
        return self.config.topic_prefix

    @property
    def loop(self) -> LoopThread:
        """The producers' (and topic administration's) loop."""
        if self._loop is None:
            self._loop = LoopThread("rabbitmq-streams-producers")
        return self._loop

    @property
    def consumer_loop(self) -> LoopThread:
        """The consumers' loop: a slow consumer (a consumer delay) must not hold up confirms."""
        if self._consumer_loop is None:
            self._consumer_loop = LoopThread("rabbitmq-streams-consumers")
        return self._consumer_loop

    def _endpoint_for(self, topic: str) -> Endpoint:
        return self._endpoints[crc32(topic.encode()) % len(self._endpoints)]

    def _run(
        self,
        coroutine: Coroutine[Any, Any, T],
        endpoint: Endpoint,
        timeout_s: float = ADMIN_TIMEOUT_S,
    ) -> T:
        """Run ``coroutine`` on the loop; errors as loadgen reports them."""
        try:
            return self.loop.run(coroutine, timeout_s)
        except TimeoutError:
            raise DriverError(
                KIND, f"{endpoint.shown}: no answer within {timeout_s:.0f} s"
            ) from None
        except exceptions.ServerError as error:
            raise failure(endpoint, error) from None

    async def _with_client(self, endpoint: Endpoint, work: Callable[[Client], Awaitable[T]]) -> T:
        client = await open_client(endpoint, self._context, "loadgen-admin")
        try:
            return await work(client)
        finally:
            await client.close()

    def check_reachable(self, timeout_s: float) -> None:
        """Every URI is used (topics are spread over them), so each must log in within
        ``timeout_s``: a refused port at once, a wrong password as a refused login."""
        for endpoint in self._endpoints:
            started = time.monotonic()
            fail_if_refused(KIND, endpoint.shown, [(endpoint.host, endpoint.port)], timeout_s)
            left = max(timeout_s - (time.monotonic() - started), 0.001)
            try:
                self.loop.run(self._with_client(endpoint, _nothing), left)
            except TimeoutError:
                raise failure(endpoint, TimeoutError(f"no login within {left:.1f} s")) from None

    # -- topics -------------------------------------------------------------------------------
    def create_topics(self, topics: list[TopicSpec]) -> None:
        for topic in topics:
            if topic.partitions < 1:
                raise DriverError(KIND, f"topic {topic.name!r} needs at least one partition")
            endpoint = self._endpoint_for(topic.name)
            self._run(self._with_client(endpoint, lambda c, t=topic: self._create(c, t)), endpoint)
            self._partitions[topic.name] = topic.partitions
        log.info("created %d topics", len(topics))

    async def _create(self, client: Client, topic: TopicSpec) -> None:
        streams = partition_streams(topic.name, topic.partitions)
        arguments = stream_arguments(self.config)
        if self.config.super_stream:
            await self._create_super_stream(client, topic, streams, arguments)
            return
        for stream in streams:
            with contextlib.suppress(exceptions.StreamAlreadyExists):
                await client.create_stream(stream, arguments)

    async def _create_super_stream(
        self, client: Client, topic: TopicSpec, streams: list[str], arguments: dict[str, int]
    ) -> None:
        if server_version(client) < SUPER_STREAM_CREATION:
            raise DriverError(
                KIND,
                f"RabbitMQ {client.server_properties.get('version')} cannot create super streams "
                "over the stream protocol (3.13 can), nor answer for one reliably to rstream: "
                "use RabbitMQ 3.13 or later, or superStream: false (plain streams)",
            )
        existing = await client.partitions(topic.name)
        if existing:
            if sorted(existing) != sorted(streams):
                raise DriverError(
                    KIND,
                    f"super stream {topic.name!r} exists with partitions {existing}, not "
                    f"{topic.partitions} named {streams[0]}…",
                )
            return
        await client.create_super_stream(
            topic.name, streams, [str(i) for i in range(topic.partitions)], arguments
        )

    def adopt_topics(self, topics: list[TopicSpec]) -> None:
        """Streams another worker created: their partition count is all that is needed."""
        for topic in topics:
            self._partitions[topic.name] = topic.partitions

    def delete_topics(self, names: list[str]) -> None:
        for name in names:
            endpoint = self._endpoint_for(name)
            partitions = self._partitions.pop(name, 0)
            self._leaders.pop(name, None)
            try:
                self._run(
                    self._with_client(
                        endpoint, lambda c, n=name, p=partitions: self._delete(c, n, p)
                    ),
                    endpoint,
                )
            except Exception as error:  # deleting is cleanup: report, do not fail the run
                log.warning("cannot delete the streams of %s: %s", name, error)

    async def _delete(self, client: Client, topic: str, partitions: int) -> None:
        if self.config.super_stream and server_version(client) >= SUPER_STREAM_CREATION:
            await client.delete_super_stream(topic)
            return
        if self.config.super_stream:
            log.warning("super stream %s: its exchange stays (RabbitMQ < 3.13)", topic)
        for stream in partition_streams(topic, partitions):
            with contextlib.suppress(exceptions.StreamDoesNotExist):
                await client.delete_stream(stream)

    def _leaders_of(self, topic: str) -> list[tuple[str, Endpoint]]:
        """Each partition stream with the node that leads it (asked once per topic)."""
        leaders = self._leaders.get(topic)
        if leaders is not None:
            return leaders
        try:
            partitions = self._partitions[topic]
        except KeyError:
            raise DriverError(
                KIND, f"topic {topic!r} was not created by this driver; its partitions are unknown"
            ) from None
        endpoint = self._endpoint_for(topic)

        async def ask(client: Client) -> list[tuple[str, Endpoint]]:
            return [
                (stream, await leader_endpoint(client, endpoint, stream))
                for stream in partition_streams(topic, partitions)
            ]

        leaders = self._leaders[topic] = self._run(self._with_client(endpoint, ask), endpoint)
        return leaders

    # -- clients ------------------------------------------------------------------------------
    def create_producer(self, topic: str) -> StreamProducer:
        leaders = self._leaders_of(topic)
        producer = StreamProducer(self.loop, self._context, self.config)
        self._producers.append(producer)
        self._run(producer.start(leaders), leaders[0][1])
        return producer

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> StreamConsumer:
        key = (topic, subscription)
        reader = self._readers.get(key)
        if reader is None:
            leaders = self._leaders_of(topic)
            reader = self._readers[key] = SubscriptionReader(
                self.consumer_loop,
                self._context,
                subscription,
                leaders,
                self.config.consumer_credit,
                self.config.offset_store_interval_ms / 1000,
                lambda gone, key=key: self._readers.pop(key, None),
            )
        try:
            return reader.join(on_message)
        except TimeoutError:
            raise DriverError(KIND, f"consumer of {topic} not subscribed in time") from None
        except exceptions.ServerError as error:
            raise failure(self._endpoint_for(topic), error) from None

    def close(self) -> None:
        """Close what clients left open, then the loop."""
        for producer in self._producers:
            producer.close()
        self._producers = []
        for loop in (self._consumer_loop, self._loop):
            if loop is not None:
                loop.stop()
        self._loop = self._consumer_loop = None


async def _nothing(_client: Client) -> None:
    return None
