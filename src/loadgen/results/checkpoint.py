"""The run's journal kept up to date while it goes, so a crash keeps what was measured.

A :class:`~loadgen.listeners.RunListener`: at the first interval it writes the journal's start
record and the hlogs' headers, and after every interval it appends that interval to the journal
and the hlogs (:mod:`loadgen.results.journal`). Nothing is rebuilt or skipped: each interval
costs one append, whatever the run's length. A run that ends normally (or is interrupted)
writes its result and removes the journal; one that dies without a chance to (SIGKILL, the
machine going down, a crash in a client library) leaves the journal and the hlogs, which
``loadgen report`` reads.
"""

from __future__ import annotations

import logging

from loadgen.results.destination import Destination
from loadgen.results.journal import JournalWriter
from loadgen.stats import IntervalStats

log = logging.getLogger("loadgen.results")


class Checkpoint:
    def __init__(self, writer: JournalWriter, destination: Destination) -> None:
        """``destination``: where the writes go, the run's output directory until a write
        fails there; the writer then writes everything at the next place first."""
        self.writer = writer
        self.destination = destination
        self.intervals: list[IntervalStats] = []
        """The run's intervals as it keeps them (spilled): the same objects, not copies, so
        the journal can be written whole in a new directory."""
        self._failed = False

    def on_phase(self, phase: str, seconds: float | None) -> None:
        """Nothing to keep before the first interval: a run that never got there (a broker
        that cannot be reached) leaves no files."""

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        self.intervals.append(stats)
        self.write()

    def write(self) -> None:
        try:
            self.destination.write(lambda directory: self.writer.write(directory, self.intervals))
        except Exception as error:  # a checkpoint that fails must not end the run
            if not self._failed:
                log.warning("writing the journal failed: %s", error)
            self._failed = True
            self.writer.directory = None  # written whole again at the next write that can

    def finish(self, intervals: list[IntervalStats]) -> None:
        """Bring the journal to the run's final ``intervals``: the drain merges its messages
        into the last interval after the listeners heard of it."""
        replaced = (
            len(intervals) == len(self.intervals) > 0 and intervals[-1] is not self.intervals[-1]
        )
        if replaced and self.writer.directory is not None:
            try:
                self.writer.replace_last(intervals[-1])
            except OSError as error:
                log.warning("writing the journal in %s failed: %s", self.writer.directory, error)
        self.intervals = []
