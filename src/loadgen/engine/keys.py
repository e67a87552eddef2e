"""Message key distributors with OMB's semantics.

A pool of 10,000 keys per process, each the unpadded base64url of 7 random bytes. ``NO_KEY``
sends no key; ``KEY_ROUND_ROBIN`` starts at index 1 and wraps; ``RANDOM_NANO`` picks
``abs(int32(nanoTime)) % 10000``, time-correlated exactly like OMB's.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from functools import cache
from itertools import cycle

POOL_SIZE = 10_000

KeySource = Callable[[int], bytes]
"""Returns the key for a message given the monotonic ns time at which it is sent."""


@cache
def key_pool() -> tuple[bytes, ...]:
    return tuple(base64.urlsafe_b64encode(os.urandom(7)).rstrip(b"=") for _ in range(POOL_SIZE))


def random_nano_index(now_ns: int) -> int:
    """OMB: ``abs(((int) System.nanoTime()) % 10000)`` — truncate to a signed 32-bit int first."""
    low = now_ns & 0xFFFFFFFF
    signed = low - (1 << 32) if low >= 1 << 31 else low
    return abs(signed) % POOL_SIZE


def key_source(distributor: str) -> KeySource | None:
    """A key source for ``distributor``, or ``None`` for ``NO_KEY`` (the loop then sends no key)."""
    if distributor == "NO_KEY":
        return None
    pool = key_pool()
    if distributor == "KEY_ROUND_ROBIN":
        ordered = cycle(pool[1:] + pool[:1])
        return lambda _now_ns: next(ordered)
    if distributor == "RANDOM_NANO":
        return lambda now_ns: pool[random_nano_index(now_ns)]
    raise ValueError(f"unknown key distributor {distributor!r}")
