"""Hand the heap's free memory back to the operating system now and then during a long run.

An encode, a broker backlog or a client's buffers take megabytes for a moment; glibc keeps what
they freed in its heap (and in the arena of the thread that freed it), so RSS stays at the
largest such moment seen. ``malloc_trim(0)`` returns it. Where libc has no ``malloc_trim``
(musl, macOS), this does nothing.
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
    """Return the heap's free memory to the OS: a few ms, so now and then, never per message."""
    if _TRIM is not None:
        _TRIM(0)
