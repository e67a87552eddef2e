"""Python's cyclic garbage collector paused while a task builds its rows.

A merge task holds tens of thousands of rows as dicts; every collection the allocations trigger
walks them all again, for nothing: the rows and the merge's state form no reference cycles, so
reference counting frees them.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off inside, back as it was on exit (Spark reuses its Python workers)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
