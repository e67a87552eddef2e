"""Payload pools, built once before the load starts so the hot path only indexes a list."""

from __future__ import annotations

import os
from pathlib import Path

from loadgen.errors import ConfigError
from loadgen.spec import Workload, resolve_payload_file

PROBE_PAYLOAD = bytes(10)
"""OMB's readiness-probe message: ten zero bytes (sent with key ``b"key"``)."""


def random_pool(message_size: int, random_ratio: float, pool_size: int) -> list[bytes]:
    """OMB's randomized pool: each payload is ``size × ratio`` random bytes, then zeros.

    The zero tail is what makes compression tests meaningful.
    """
    random_bytes = int(message_size * random_ratio)
    zeros = bytes(message_size - random_bytes)
    return [os.urandom(random_bytes) + zeros for _ in range(pool_size)]


def file_payload(path: Path, message_size: int) -> list[bytes]:
    """A one-payload pool read from ``path``, whose length must equal ``message_size`` (OMB)."""
    data = path.read_bytes()
    if len(data) != message_size:
        raise ConfigError(
            f"payload file is {len(data)} bytes but messageSize is {message_size}",
            file=str(path),
            path="payloadFile",
            value=str(path),
            allowed=f"a file of exactly {message_size} bytes",
        )
    return [data]


def build_payloads(workload: Workload, workload_path: Path | None) -> list[bytes]:
    """The payload pool a workload asks for.

    OMB needs either a randomized pool or a payload file; a workload built in Python with only
    ``messageSize`` gets one fully random payload of that size.
    """
    if workload.use_randomized_payloads:
        return random_pool(
            workload.message_size,
            workload.random_bytes_ratio,
            workload.randomized_payload_pool_size,
        )
    if workload.payload_file:
        return file_payload(resolve_payload_file(workload, workload_path), workload.message_size)
    return random_pool(workload.message_size, 1.0, 1)
