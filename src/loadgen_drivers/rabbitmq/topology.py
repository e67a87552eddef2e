"""How a loadgen topic maps onto RabbitMQ: one exchange, routing keys as partitions.

A topic with N partitions is an exchange whose messages carry one of the routing keys
``"0" … "N-1"``. Every subscription owns N queues, queue k bound with key k, so a direct (or
topic) exchange fans one stream into N queues, the way Confluent's OMB fork does. A one-partition
topic has one queue per subscription named as OMB names it (``<exchange>-<subscription>``).
A fanout exchange ignores routing keys and so cannot have partitions.
"""

from __future__ import annotations

from zlib import crc32

from loadgen.base.errors import ConfigError
from loadgen_drivers.rabbitmq.config import ExchangeType, QueueType

QUEUE_TYPE_ARGUMENT = {QueueType.QUORUM: "quorum", QueueType.STREAM: "stream"}


def routing_keys(partitions: int) -> list[str]:
    return [str(k) for k in range(partitions)]


def queue_names(topic: str, subscription: str, partitions: int) -> list[str]:
    if partitions == 1:
        return [f"{topic}-{subscription}"]
    return [f"{topic}-{subscription}-part-{k}" for k in range(partitions)]


def queue_arguments(queue_type: QueueType) -> dict[str, str]:
    kind = QUEUE_TYPE_ARGUMENT.get(queue_type)
    return {"x-queue-type": kind} if kind else {}


def check_partitions(exchange_type: ExchangeType, partitions: int, source: str | None) -> None:
    if partitions < 1:
        raise ConfigError(
            "a RabbitMQ topic needs at least one partition",
            file=source,
            path="partitionsPerTopic",
            value=partitions,
            allowed="an integer ≥ 1",
        )
    if exchange_type is ExchangeType.FANOUT and partitions > 1:
        raise ConfigError(
            "a fanout exchange ignores routing keys, so it cannot spread a topic over partitions",
            file=source,
            path="exchangeType",
            value=exchange_type.value,
            allowed=["direct", "topic", "fanout (with partitionsPerTopic: 1)"],
        )


def key_partition(key: bytes, partitions: int) -> int:
    """The partition of a message key: stable across processes and machines (CRC-32)."""
    return crc32(key) % partitions
