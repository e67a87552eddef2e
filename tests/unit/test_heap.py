"""loadgen.heap: memory freed after a big build leaves the process, not just the objects."""

import gc

import psutil
import pytest

from loadgen import heap

MB = 2**20


def rss() -> int:
    return psutil.Process().memory_info().rss


@pytest.mark.skipif(heap._TRIM is None, reason="this libc has no malloc_trim")
def test_freed_heap_memory_goes_back_to_the_os():
    blocks = [bytearray(1000) for _ in range(60_000)]  # ~60 MB from malloc (over pymalloc's 512 B)
    in_use = bytearray(1000)  # allocated last, so the heap's top stays in use after the rest go
    del blocks
    gc.collect()
    before = rss()
    heap.release_free_memory()
    assert rss() < before - 30 * MB
    assert len(in_use) == 1000
