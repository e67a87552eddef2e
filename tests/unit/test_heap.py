"""loadgen.base.heap: what a long run freed leaves the process, not just the Python objects."""

import gc
import threading

import psutil
import pytest
from tests.unit.test_journal import NAME, START, kept_intervals

from loadgen.base import heap
from loadgen.formats.journal import JournalWriter, journal_path, read_journal
from loadgen.result_files import checkpoint
from loadgen.result_files.checkpoint import THREAD_NAME, Checkpoint
from loadgen.result_files.destination import Destination

MB = 2**20


def rss() -> int:
    return psutil.Process().memory_info().rss


@pytest.mark.skipif(heap._TRIM is None, reason="this libc has no malloc_trim")
def test_freed_heap_memory_goes_back_to_the_os():
    blocks = [bytearray(1000) for _ in range(60_000)]  # ~60 MB from malloc (over pymalloc's 512 B)
    kept = bytearray(1000)  # allocated last: the heap's top stays in use, so free() returns nothing
    del blocks
    gc.collect()
    before = rss()
    heap.release_free_memory()
    assert rss() < before - 30 * MB
    assert len(kept) == 1000


def test_the_journal_writer_hands_the_heap_back_after_its_writes(tmp_path, monkeypatch):
    """On its own thread, so the trim's milliseconds delay neither the run nor a write."""
    trims = []
    monkeypatch.setattr(
        checkpoint, "release_free_memory", lambda: trims.append(threading.current_thread().name)
    )
    monkeypatch.setattr(checkpoint, "TRIM_EVERY_S", 0.0)
    writes = Checkpoint(JournalWriter(NAME, START), Destination(tmp_path, []))
    for stats in kept_intervals(3, warmups=0):
        writes.on_interval(stats, 0)
    writes.close(wait_s=30)  # a loaded machine may take over the default second
    assert trims
    assert set(trims) == {THREAD_NAME}
    assert len(read_journal(journal_path(tmp_path / NAME))[1]) == 3  # after real writes
