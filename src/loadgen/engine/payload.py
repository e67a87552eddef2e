"""Payload pools, built once before the load starts so the hot path only indexes a list."""

from __future__ import annotations

import os
import random
from pathlib import Path

from loadgen.spec import Workload, resolve_payload_file
from loadgen.spec.message_sizes import SizeRange, SizeWeight

MIN_SIZED_POOL = 1024
"""Entries of a size-distribution pool at least: producers pick by index round robin, so a short
cycle (4 entries for weights 3:1) would give each of 2 producers always the same sizes."""
SIZE_SEED = 31
"""The pool's order is shuffled with a fixed seed: a workload always sends the same sizes in the
same order, and a run's bytes follow from its message count."""

PROBE_PAYLOAD = bytes(10)
"""OMB's readiness-probe message: ten zero bytes (sent with key ``b"key"``)."""


def random_pool(message_size: int, random_ratio: float, pool_size: int) -> list[bytes]:
    """OMB's randomized pool: each payload is ``size × ratio`` random bytes, then zeros.

    The zero tail is what makes compression tests meaningful.
    """
    random_bytes = int(message_size * random_ratio)
    zeros = bytes(message_size - random_bytes)
    return [os.urandom(random_bytes) + zeros for _ in range(pool_size)]


def pool_sizes(
    sizes: tuple[SizeWeight, ...] | None, span: SizeRange | None, pool_size: int
) -> list[int]:
    """The size of each pool entry, in the order the producer loop cycles through them.

    Weighted sizes: each size ``weight × r`` times, with ``r`` the smallest repeat giving at
    least ``max(pool_size, MIN_SIZED_POOL)`` entries, so every full cycle has the weights'
    exact proportions. A range: that many sizes evenly spaced from ``min`` to ``max`` (both
    included; a stratified sample, so its mean is the range's middle give or take rounding).
    """
    wanted = max(pool_size, MIN_SIZED_POOL)
    if sizes:
        total = sum(entry.weight for entry in sizes)
        repeat = -(-wanted // total)
        order = [entry.size for entry in sizes for _ in range(entry.weight * repeat)]
    elif span is not None:
        steps, last = span.max - span.min, wanted - 1
        order = [span.min + (2 * i * steps + last) // (2 * last) for i in range(wanted)]
    else:
        raise ValueError("no size distribution")
    random.Random(SIZE_SEED).shuffle(order)
    return order


def sized_pool(order: list[int], random_ratio: float) -> list[bytes]:
    """One payload per distinct size (``size × ratio`` random bytes, then zeros), referenced by
    every entry of that size: the pool costs one payload per size, not per entry."""
    block = os.urandom(int(max(order) * random_ratio))
    by_size = {
        size: block[: int(size * random_ratio)] + bytes(size - int(size * random_ratio))
        for size in set(order)
    }
    return [by_size[size] for size in order]


def build_payloads(workload: Workload, workload_path: Path | None) -> list[bytes]:
    """The payload pool a workload asks for.

    OMB needs either a randomized pool or a payload file; a workload built in Python with only
    ``messageSize`` gets one fully random payload of that size. A size distribution
    (``messageSizes`` / ``messageSizeRange``) gets a pool whose sizes follow it, random as
    ``randomBytesRatio`` says when ``useRandomizedPayloads`` is set, else fully random.
    """
    if workload.message_sizes or workload.message_size_range:
        randomized = workload.use_randomized_payloads
        order = pool_sizes(
            workload.message_sizes,
            workload.message_size_range,
            workload.randomized_payload_pool_size if randomized else 0,
        )
        return sized_pool(order, workload.random_bytes_ratio if randomized else 1.0)
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
