"""Payload pools, built once before the load starts so the hot path only indexes a list."""

from __future__ import annotations

import os
from pathlib import Path

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
        # resolve_payload_file has checked the length against messageSize (OMB's rule)
        return [resolve_payload_file(workload, workload_path).read_bytes()]
    return random_pool(workload.message_size, 1.0, 1)
