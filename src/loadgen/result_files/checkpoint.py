"""The run's journal kept up to date while it goes, so a crash keeps what was measured.

A :class:`~loadgen.engine.listeners.RunListener`: at the first interval it writes the journal's
start record and the hlogs' headers, and after every interval it appends that interval to the
journal and the hlogs (:mod:`loadgen.formats.journal`). Nothing is rebuilt or skipped: each
interval costs one append, whatever the run's length. A run that ends normally (or is interrupted)
writes its result and removes the journal; one that dies without a chance to (SIGKILL, the
machine going down, a crash in a client library) leaves the journal and the hlogs, which
``loadgen report`` reads.

The writes run on a thread of their own, not on the measurement thread that tells the
listeners: a write's ``fdatasync`` takes ~4 ms on an idle disk, seconds on an overloaded
machine and forever on a hung one (NFS, a dying device), and the run's ticks, its outage
watch and its reaction to a signal must not wait for it. The journal lags the run by what the
disk takes; after a slow write the next one appends every interval that came meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time

from loadgen.base.heap import release_free_memory
from loadgen.base.thread_names import name_this_thread
from loadgen.engine.stats import IntervalStats
from loadgen.formats.journal import JournalWriter
from loadgen.result_files.destination import Destination

log = logging.getLogger("loadgen.results")

FINISH_WAIT_S = 1.0
"""How long the run's end waits for the writer to catch up. A healthy disk takes milliseconds;
after a signal the wait is cut to what the stop budget has left (:mod:`loadgen.running.stop`). A
journal still behind then loses nothing: the result written next holds every interval, and
replaces the journal."""
THREAD_NAME = "loadgen-journal"
TRIM_EVERY_S = 30.0
"""How often the writer hands the heap's free memory back (:mod:`loadgen.base.heap`): after a
write, on its own thread, so the trim's few ms delay neither the run nor the journal."""


class Checkpoint:
    def __init__(self, writer: JournalWriter, destination: Destination) -> None:
        """``destination``: where the writes go, the run's output directory until a write
        fails there; the writer then writes everything at the next place first."""
        self.writer = writer
        self.destination = destination
        self.intervals: list[IntervalStats] = []
        """The run's intervals as it keeps them (spilled): the same objects, not copies, so
        the journal can be written whole in a new directory. Only the measurement thread
        appends to it; the writer reads a copy of the list (references: microseconds)."""
        self._failed = False
        self._wake = threading.Event()
        self._stopping = False
        self._last: IntervalStats | None = None
        """The drained last interval, recorded after the others (``replacesLast``)."""
        self._thread: threading.Thread | None = None

    def on_phase(self, phase: str, seconds: float | None) -> None:
        """Nothing to keep before the first interval: a run that never got there (a broker
        that cannot be reached) leaves no files."""

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        """On the measurement thread: no I/O, the interval is kept and the writer woken."""
        self.intervals.append(stats)
        if self._thread is None:
            self._thread = threading.Thread(target=self._write_until_stopped, name=THREAD_NAME)
            self._thread.daemon = True  # a hung disk must not keep the process from exiting
            self._thread.start()
        self._wake.set()

    def _write_until_stopped(self) -> None:
        """The writer thread: each wake-up writes every interval not written yet, in one go."""
        name_this_thread()
        stopping = False
        trimmed = time.monotonic()
        while not stopping:
            self._wake.wait()
            self._wake.clear()
            stopping = self._stopping  # a stop asked during the write wakes it once more
            self.write()
            if time.monotonic() - trimmed >= TRIM_EVERY_S:
                release_free_memory()
                trimmed = time.monotonic()
        if self._last is not None and self.writer.directory is not None:
            try:
                self.writer.replace_last(self._last)
            except OSError as error:
                log.warning("writing the journal in %s failed: %s", self.writer.directory, error)

    def write(self) -> None:
        try:
            intervals = self.intervals[:]
            self.destination.write(lambda directory: self.writer.write(directory, intervals))
        except Exception as error:  # a checkpoint that fails must not end the run
            if not self._failed:
                log.warning("writing the journal failed: %s", error)
            self._failed = True
            self.writer.directory = None  # written whole again at the next write that can

    def finish(self, intervals: list[IntervalStats], wait_s: float = FINISH_WAIT_S) -> None:
        """Bring the journal to the run's final ``intervals`` (the drain merges its messages
        into the last interval after the listeners heard of it), then :meth:`close`."""
        if len(intervals) == len(self.intervals) > 0 and intervals[-1] is not self.intervals[-1]:
            self._last = intervals[-1]
        self.close(wait_s)

    def close(self, wait_s: float = FINISH_WAIT_S) -> None:
        """Stop the writer once it has written everything, waiting at most ``wait_s``: a
        disk that takes longer is left to it, and the run goes on to write its result. Called
        at the run's end whether it ended or raised."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping = True
        self._wake.set()
        thread.join(wait_s)
        if thread.is_alive():
            self.writer.closed = True
            log.warning(
                "the journal in %s may be behind the run (%d of %d intervals written): its "
                "disk has not finished a write in %.1f s; the result is written without it",
                self.writer.directory,
                self.writer.written,
                len(self.intervals),
                wait_s,
            )
        self.intervals = []
