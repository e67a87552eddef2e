"""Hand freed heap memory back to the operating system after a large, short-lived build.

A checkpoint builds the whole result so far (every interval's histograms, encoded) and drops it
a moment later. glibc keeps most of what was freed in its heap, so the process's RSS stays at
the largest build seen and climbs as the run grows; ``malloc_trim(0)`` returns it. Where libc
has no ``malloc_trim`` (musl, macOS), this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def release_free_memory() -> None:
    """Return the heap's free memory to the OS: a few ms, so after big builds, never per message."""
    if _TRIM is not None:
        _TRIM(0)
