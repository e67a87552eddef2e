"""The result file rewritten after every interval, so a crash keeps what was measured.

A run that ends normally (or is interrupted) replaces this file with its real result; one that
dies without a chance to write (SIGKILL, the machine going down, a crash in a client library)
leaves the result of its last completed interval: ``incomplete: true``, ``stopReason:
unfinished``, with the hlogs next to it. Building the document costs more as the run grows
(every histogram is merged again), so a checkpoint is skipped while writing would take more
than a tenth of the time since the previous one; the run is never slowed by more than that.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadgen.heap import release_free_memory
from loadgen.results.files import write_json_atomic
from loadgen.results.hlog import write_hlogs
from loadgen.stats import IntervalStats

log = logging.getLogger("loadgen.results")

UNFINISHED = "unfinished"
UNFINISHED_DETAIL = (
    "written after an interval while the run was going; the process ended before the run did "
    "(killed or crashed), so this holds the intervals completed until then"
)
MAX_SHARE = 0.1
"""The largest share of the run's time spent writing checkpoints."""


class Checkpoint:
    def __init__(
        self,
        path: Path,
        started_ms: int,
        build: Callable[[list[IntervalStats]], dict[str, Any]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``build`` turns the intervals so far into the result document to write."""
        self.path = path
        self.started_ms = started_ms
        self.build = build
        self.clock = clock
        self.intervals: list[IntervalStats] = []
        self._next_write = 0.0

    def on_phase(self, phase: str, seconds: float | None) -> None:
        """Only intervals change the result (a :class:`~loadgen.listeners.RunListener`)."""

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        self.intervals.append(stats)  # as the run keeps it (spilled), not a copy
        self.write()

    def write(self) -> None:
        began = self.clock()
        if began < self._next_write:
            return
        try:
            write_json_atomic(self.path, self.build(self.intervals))
            write_hlogs(self.path, self.intervals, self.started_ms)
        except Exception as error:  # a checkpoint that fails must not end the run
            log.warning("writing the checkpoint %s failed: %s", self.path, error)
        release_free_memory()  # the document just built is garbage now: its heap goes back
        took = self.clock() - began
        self._next_write = began + took / MAX_SHARE
