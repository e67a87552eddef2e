"""How a loadgen topic maps onto Redis: one stream key per partition.

A topic with one partition is the stream key named as the topic, as OMB's driver names it; a
topic with N > 1 partitions is the N keys ``<topic>:0`` … ``<topic>:N-1`` (``:``, Redis's
usual separator of a key's parts, so ``SCAN MATCH <topic>:*`` finds them). A subscription is a
consumer group of its name on every one of them. A message key picks its stream by CRC-32 (the
same on every machine, as the RabbitMQ driver picks a routing key); no key round-robins.
"""

from __future__ import annotations

from zlib import crc32


def stream_keys(topic: str, partitions: int) -> list[str]:
    if partitions == 1:
        return [topic]
    return [f"{topic}:{k}" for k in range(partitions)]


def key_partition(key: bytes, partitions: int) -> int:
    """The partition of a message key: stable across processes and machines (CRC-32)."""
    return crc32(key) % partitions
