"""The pulsar-client arguments each config section becomes (the table in :mod:`.config`).

This is the only module that imports ``pulsar``: a missing pulsar-client becomes
:class:`~loadgen.base.errors.MissingExtra` with its install command, wherever the driver is loaded.
"""

from __future__ import annotations

import logging
import os
import random
from math import ceil
from time import monotonic_ns
from typing import Any
from zlib import crc32

from loadgen.base.errors import MissingExtra
from loadgen_drivers.pulsar.config import (
    AckMode,
    BatchingType,
    ClientConfig,
    ConsumerConfig,
    ProducerConfig,
    SubscriptionType,
)

try:
    import pulsar
except ImportError:
    raise MissingExtra("pulsar-client", "pulsar") from None

client_log = logging.getLogger("loadgen.pulsar.client")
"""Its effective level sets the C++ client's log level (``-v`` info, ``-vv`` debug).

The C++ client's lines go to stdout in its own format, not through Python logging: given a
Python logger, pulsar-client hands it every line, debug ones included (a partitioned consumer
logs one per message, with the payload, and prints it raw when it is not UTF-8)."""
LOG_LEVELS = (
    (logging.DEBUG, pulsar.LoggerLevel.Debug),
    (logging.INFO, pulsar.LoggerLevel.Info),
    (logging.WARNING, pulsar.LoggerLevel.Warn),
)

CONSUMER_TYPES = {
    SubscriptionType.EXCLUSIVE: pulsar.ConsumerType.Exclusive,
    SubscriptionType.SHARED: pulsar.ConsumerType.Shared,
    SubscriptionType.FAILOVER: pulsar.ConsumerType.Failover,
    SubscriptionType.KEY_SHARED: pulsar.ConsumerType.KeyShared,
}
BATCHING_TYPES = {
    BatchingType.DEFAULT: pulsar.BatchingType.Default,
    BatchingType.KEY_BASED: pulsar.BatchingType.KeyBased,
}
INITIAL_POSITIONS = {
    "Latest": pulsar.InitialPosition.Latest,
    "Earliest": pulsar.InitialPosition.Earliest,
}


def client_kwargs(client: ClientConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "io_threads": client.io_threads,
        "message_listener_threads": client.listener_threads,
        "concurrent_lookup_requests": client.max_concurrent_lookup_requests,
        "operation_timeout_seconds": client.operation_timeout_s,
        "tls_trust_certs_file_path": client.tls_trust_certs_file_path,
        "tls_allow_insecure_connection": client.tls_allow_insecure_connection,
        "tls_validate_hostname": client.tls_enable_hostname_verification,
    }
    auth = client.authentication
    if auth.plugin:
        kwargs["authentication"] = pulsar.Authentication(auth.plugin, auth.data or "")
    return kwargs


def client_logger() -> pulsar.ConsoleLogger:
    level = client_log.getEffectiveLevel()
    return pulsar.ConsoleLogger(
        next((ours for python, ours in LOG_LEVELS if level <= python), pulsar.LoggerLevel.Error)
    )


def open_client(client: ClientConfig, timeout_s: float | None = None) -> pulsar.Client:
    """A client for ``serviceUrl``. With ``timeout_s`` (a reachability check) it gives up on
    connecting and each operation after that long, and logs nothing: the caller reports."""
    kwargs = client_kwargs(client)
    if timeout_s is None:
        kwargs["logger"] = client_logger()
    else:
        kwargs["operation_timeout_seconds"] = max(1, ceil(timeout_s))
        kwargs["connection_timeout_ms"] = max(1, int(timeout_s * 1000))
        kwargs["logger"] = pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull)
    return pulsar.Client(client.service_url, **kwargs)


class SwitchEveryNDelays:
    """The Java client's round-robin router for batching: a message without a key stays on
    one partition for N × the batching delay, then moves to the next; a keyed message goes to
    its key's partition (CRC-32 here). The C++ client's own router has no N: it switches at
    every publish delay or full batch."""

    def __init__(self, switch_ms: int) -> None:
        self._switch_ns = max(1, switch_ms) * 1_000_000
        self._start = random.randrange(1 << 16)

    def __call__(self, message: pulsar.Message, partitions: int) -> int:
        key = message.partition_key()
        if key:
            return crc32(key.encode()) % partitions
        return (self._start + monotonic_ns() // self._switch_ns) % partitions


def producer_kwargs(producer: ProducerConfig) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "batching_enabled": producer.batching_enabled,
        "batching_max_publish_delay_ms": producer.batching_max_publish_delay_ms,
        "batching_max_allowed_size_in_bytes": producer.batching_max_bytes,
        "batching_max_messages": producer.batching_max_messages,
        "batching_type": BATCHING_TYPES[producer.batching_type],
        "block_if_queue_full": producer.block_if_queue_full,
        "max_pending_messages": producer.pending_queue_size,
        "max_pending_messages_across_partitions": producer.max_pending_across_partitions,
        "send_timeout_millis": producer.send_timeout_ms,
    }
    frequency = producer.batching_partition_switch_frequency
    if frequency is not None and producer.batching_enabled:
        kwargs["message_router"] = SwitchEveryNDelays(
            frequency * producer.batching_max_publish_delay_ms
        )
    return kwargs


def consumer_kwargs(consumer: ConsumerConfig) -> dict[str, Any]:
    return {
        "consumer_type": CONSUMER_TYPES[consumer.subscription_type],
        "receiver_queue_size": consumer.receiver_queue_size,
        "max_total_receiver_queue_size_across_partitions": consumer.max_total_receiver_queue_size,
        "initial_position": INITIAL_POSITIONS[consumer.initial_position],
        "batch_index_ack_enabled": consumer.ack_mode is AckMode.BATCH_INDEX,
    }
