"""The Redis Streams driver on redis-py: stream keys as partitions, consumer groups as
subscriptions, pipelined ``XADD``.

* Topic with N partitions = N stream keys (:mod:`.topology`): the topic's name for N = 1 (OMB's
  key), ``<topic>:<k>`` otherwise; a message key picks one by CRC-32, no key round-robins.
  Creating a topic writes nothing: a key comes into being with its first ``XADD`` or its first
  group (``MKSTREAM``), as in OMB's driver. Deleting it deletes the keys.
* Subscription = a consumer group of its name on every key, created at ``$`` when its first
  consumer is (so it reads what is written from then on; a catch-up run's backlog is written
  after that, while the consumers are paused). Deleting it destroys the groups.
* Producers: :mod:`.producer` (pipelined ``XADD``); consumers: :mod:`.consumer`
  (``XREADGROUP``/``XACK``, ``XINFO GROUPS`` for the backlog).
* Connections: :mod:`.connections` (OMB's pool limits; refused, login and TLS failures).
"""

from __future__ import annotations

import logging
import time
import uuid

import redis

from loadgen.base.errors import (
    BrokerLoginRefused,
    BrokerTlsFailed,
    BrokerUnreachable,
    ConfigError,
    DriverError,
)
from loadgen.driver_api import OnMessage, TopicSpec, fail_if_refused, tls_verify_problem
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import parse_model
from loadgen_drivers.redis import Driver
from loadgen_drivers.redis.config import RedisConfig
from loadgen_drivers.redis.connections import Pool, address_of, connect
from loadgen_drivers.redis.consumer import RedisConsumer
from loadgen_drivers.redis.producer import RedisProducer
from loadgen_drivers.redis.topology import stream_keys

log = logging.getLogger("loadgen.redis")

CONNECT_TIMEOUT_S = 15.0
TOPIC_PREFIX = "redis-openmessaging-benchmark"
"""OMB's driver's topic name prefix."""


class RedisDriver(Driver):
    """What ``Driver.from_config`` returns: the driver at work."""

    def __init__(self, spec: DriverSpec, config: RedisConfig) -> None:
        self.spec = spec
        self.config = config
        self._pool = Pool(config, CONNECT_TIMEOUT_S)
        self._partitions: dict[str, int] = {}
        self._groups: dict[str, set[str]] = {}
        """The subscriptions this driver made a group for, by topic."""

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> RedisConfig:
        config = parse_model(RedisConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)
        if config.tls is not None:
            try:
                config.tls.context()
            except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
                raise ConfigError(
                    f"TLS files: {error}", file=spec.source, path="tls",
                    value={k: v for k, v in config.tls.model_dump(by_alias=True).items() if v},
                    allowed="readable PEM files (caFile, certFile, keyFile)",
                ) from None  # fmt: skip
        return config

    @classmethod
    def from_config(cls, spec: DriverSpec) -> RedisDriver:
        return cls(spec, cls.validate_config(spec))

    @property
    def topic_name_prefix(self) -> str:
        return TOPIC_PREFIX

    # -- reachability -------------------------------------------------------------------------
    def check_reachable(self, timeout_s: float) -> None:
        """A refused port at once (:func:`fail_if_refused`); a certificate that does not
        verify named by one handshake of our own; then a login and a ``PING``."""
        config = self.config
        started = time.monotonic()
        address = (config.redis_host, config.redis_port)
        fail_if_refused("redis", address_of(config), [address], timeout_s)
        if config.tls is not None:
            problem = tls_verify_problem(address, config.tls.context())
            if problem:
                raise BrokerTlsFailed("redis", address_of(config), problem)
        left = max(timeout_s - (time.monotonic() - started), 0.001)
        connection = connect(config, left)
        try:
            connection.send_command("PING")
            connection.read_response()
        except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
            raise BrokerUnreachable("redis", address_of(config), str(error)) from None
        finally:
            connection.disconnect()

    # -- topics and subscriptions ---------------------------------------------------------------
    def create_topics(self, topics: list[TopicSpec]) -> None:
        """Nothing to write: a stream key exists from its first entry or group."""
        for topic in topics:
            if topic.partitions < 1:
                raise DriverError("redis", f"topic {topic.name!r} needs at least one partition")
            self._partitions[topic.name] = topic.partitions

    def adopt_topics(self, topics: list[TopicSpec]) -> None:
        for topic in topics:
            self._partitions[topic.name] = topic.partitions

    def _keys_of(self, topic: str) -> list[str]:
        try:
            return stream_keys(topic, self._partitions[topic])
        except KeyError:
            raise DriverError(
                "redis",
                f"topic {topic!r} was not created by this driver; its partitions are unknown",
            ) from None

    def _admin(self, commands: list[tuple], what: str, *, ignore: str = "") -> None:
        """``commands`` in one pipeline on a borrowed connection; an error reply starting with
        ``ignore`` is expected (``BUSYGROUP``: the group exists)."""
        if not commands:
            return
        connection = self._pool.take("topic admin")
        try:
            connection.send_packed_command([b"".join(connection.pack_commands(commands))])
            for _ in commands:
                try:
                    connection.read_response()
                except redis.ResponseError as error:
                    if not (ignore and str(error).startswith(ignore)):
                        raise DriverError("redis", f"{what}: {error}") from None
        finally:
            self._pool.give_back(connection)

    def delete_topics(self, names: list[str]) -> None:
        keys = [key for name in names if name in self._partitions for key in self._keys_of(name)]
        try:
            self._admin([("DEL", key) for key in keys], "deleting streams")
        except (BrokerUnreachable, BrokerLoginRefused, BrokerTlsFailed, DriverError) as error:
            log.warning("cannot delete %d stream keys: %s", len(keys), error)
        for name in names:
            self._groups.pop(name, None)
            self._partitions.pop(name, None)

    def delete_subscriptions(self, names: list[str]) -> None:
        """The groups this driver made on ``names``' keys; the keys stay (the worker that
        created the topics deletes them)."""
        commands = [
            ("XGROUP", "DESTROY", key, group)
            for name in names
            if name in self._partitions
            for group in sorted(self._groups.pop(name, ()))
            for key in self._keys_of(name)
        ]
        try:
            self._admin(commands, "destroying consumer groups")
        except (BrokerUnreachable, BrokerLoginRefused, BrokerTlsFailed, DriverError) as error:
            log.warning("cannot destroy the consumer groups: %s", error)

    # -- clients ------------------------------------------------------------------------------
    def create_producer(self, topic: str) -> RedisProducer:
        keys = self._keys_of(topic)
        connection = self._pool.take("producer")
        return RedisProducer(connection, keys, self.config, self._pool.give_back)

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> RedisConsumer:
        keys = self._keys_of(topic)
        self._admin(
            [("XGROUP", "CREATE", key, subscription, "$", "MKSTREAM") for key in keys],
            f"creating consumer group {subscription}",
            ignore="BUSYGROUP",
        )
        self._groups.setdefault(topic, set()).add(subscription)
        connection = self._pool.take("consumer")
        name = f"{subscription}-{uuid.uuid4().hex[:8]}"
        config = self.config
        return RedisConsumer(
            connection, keys, subscription, name, config.read_count, config.block_ms,
            on_message, self._pool.give_back,
        )  # fmt: skip

    def close(self) -> None:
        self._pool.close()
