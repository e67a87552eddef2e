"""The run's journal: ``<result stem>.journal`` beside the result, only ever appended to.

One JSON object a line: first the run's :class:`~loadgen.formats.result_json.RunStart`, then one
record per completed interval: its counters, and its histograms as base64 of
:func:`loadgen.base.hdr.pack`, not the V2 encoding the hlogs hold: V2 is 4-20 % smaller, but
:func:`~loadgen.base.hdr.unpack` reads a histogram back several times faster than
:func:`~loadgen.base.hdr.decode`, and a crashed run is rebuilt from every record it left (an
hour of 1-s intervals is 3600 of them, each with several metrics). ``writeMs`` and
``writeCpuMs`` in a record are how long the previous write took, in wall time and in CPU time
of the writing thread (``bench/soak.py`` reads them). Each line goes in with one
``write`` on an ``O_APPEND`` descriptor, then ``fdatasync`` (~1 ms, a tenth of a percent of a
1-s interval; the checkpoint writes on a thread of its own, so a slow disk delays the journal,
not the run): a crash (SIGKILL, a power cut) loses at most the intervals not written yet, and a
line torn by one is ignored by the reader with a warning. Appending costs the same at the
3000th interval as at the 3rd. The hlogs beside it
(:mod:`loadgen.formats.hlog`) grow the same way, a line per measured interval, not synced:
the journal is what a crash is recovered from.

A finished run writes its result and removes the journal; one that died leaves it, and
:func:`result_from_journal` rebuilds the result (``incomplete``, ``stopReason: unfinished``)
through the builder the run itself uses.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.base.files import write_bytes_atomic, write_text_atomic
from loadgen.engine.spill import PackedHistograms
from loadgen.engine.stats import IntervalStats, recorded_metrics
from loadgen.formats.hlog import hlog_line, hlog_path, hlog_text
from loadgen.formats.result_json import RunStart, result_document, unfinished_outcome
from loadgen.formats.worker_protocol import stats_from_json, stats_to_json

log = logging.getLogger("loadgen.results")

FORMAT = 1
"""Bumped when a record changes shape; a reader refuses a format it does not know."""
SUFFIX = ".journal"


def journal_path(result_path: Path) -> Path:
    return result_path.with_suffix(SUFFIX)


def _packed(histogram: hdr.Histogram) -> str:
    return base64.b64encode(hdr.pack(histogram)).decode("ascii")


def _unpacked(encoded: dict[str, str]) -> PackedHistograms:
    return PackedHistograms({metric: base64.b64decode(text) for metric, text in encoded.items()})


def start_record(start: RunStart) -> dict[str, Any]:
    return {"journal": "loadgen", "format": FORMAT, "kind": "start", **start.to_json()}


def interval_record(stats: IntervalStats, **extra: Any) -> dict[str, Any]:
    return {"kind": "interval", **stats_to_json(stats, _packed), **extra}


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()


def append_line(path: Path, line: bytes, *, sync: bool) -> None:
    """Add ``line`` to ``path`` in one write; a write the disk cut short is taken back (the file
    is truncated to where it was), so the file never holds a torn line followed by more."""
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(handle).st_size
        try:
            written = os.write(handle, line)
            if written != len(line):
                raise OSError(f"wrote {written} of {len(line)} bytes to {path}")
            if sync:
                os.fdatasync(handle)
        except OSError:
            os.ftruncate(handle, size)
            raise
    finally:
        os.close(handle)


class JournalWriter:
    """Writes one run's journal and hlogs; keeps no intervals, only where it wrote last."""

    def __init__(self, result_name: str, start: RunStart) -> None:
        """``result_name``: the result file's name (``<stem>.json``), in whichever directory."""
        self.result_name = result_name
        self.start = start
        self.directory: Path | None = None
        self.written = 0
        """How many of the run's intervals the journal holds (the run's list is the truth)."""
        self.hlogs: set[str] = set()
        self.last_write: dict[str, float] = {}
        """The previous write's wall and CPU time, in the next interval's record."""
        self.closed = False
        """Set when the run stopped waiting for this writer (a hung disk): a write still under
        way adds nothing more, since the run's end writes the result and hlogs itself (a line
        appended after that would land in its hlogs)."""

    def write(self, directory: Path, intervals: Sequence[IntervalStats]) -> None:
        """Bring the journal and hlogs in ``directory`` up to the run's ``intervals``: append
        the ones not written yet; if ``directory`` is not where the last write went (or the
        journal is new), first write the whole of both there."""
        if self.closed:
            return
        began, began_cpu = time.perf_counter(), time.thread_time()
        if directory != self.directory:
            self._write_whole(directory, intervals[: self.written])
        for stats in intervals[self.written :]:
            self._append(stats, intervals)
        self.last_write = {
            "writeMs": round((time.perf_counter() - began) * 1000, 3),
            "writeCpuMs": round((time.thread_time() - began_cpu) * 1000, 3),
        }
        log.debug("journal write: %(writeMs).2f ms, %(writeCpuMs).2f ms of CPU", self.last_write)

    def replace_last(self, stats: IntervalStats) -> None:
        """Record that the run's last interval became ``stats`` (the drain's messages merged
        into it); the hlogs are rewritten by the run's end."""
        assert self.directory is not None, "replace_last after a first write"
        record = interval_record(stats, replacesLast=True)
        self._add(journal_path(self._result_path()), _line(record), sync=True)

    def _result_path(self) -> Path:
        assert self.directory is not None
        return self.directory / self.result_name

    def _write_whole(self, directory: Path, intervals: Sequence[IntervalStats]) -> None:
        lines = [_line(start_record(self.start))]
        lines += [_line(interval_record(stats)) for stats in intervals]
        result = directory / self.result_name
        write_bytes_atomic(journal_path(result), b"".join(lines))
        self.hlogs = set()
        self.directory = directory
        self._write_new_hlogs(intervals)

    def _write_new_hlogs(self, intervals: Sequence[IntervalStats]) -> None:
        """Whole hlogs for the metrics that have none yet (all at first; ``endToEndUncorrected``
        when the clocks' correction begins)."""
        for metric in recorded_metrics(intervals):
            if metric not in self.hlogs:
                path = hlog_path(self._result_path(), metric)
                write_text_atomic(path, hlog_text(metric, list(intervals), self.start.started_ms))
                self.hlogs.add(metric)

    def _append(self, stats: IntervalStats, intervals: Sequence[IntervalStats]) -> None:
        record = interval_record(stats, **self.last_write)
        self._add(journal_path(self._result_path()), _line(record), sync=True)
        self.written += 1
        new = set(recorded_metrics((stats,))) - self.hlogs  # this interval's: flat in the run
        if new:
            self._write_new_hlogs(intervals[: self.written])
        if stats.warmup:
            return
        for metric in self.hlogs - new:
            line = hlog_line(metric, stats, self.start.started_ms) + "\n"
            self._add(hlog_path(self._result_path(), metric), line.encode(), sync=False)

    def _add(self, path: Path, line: bytes, *, sync: bool) -> None:
        if not self.closed:
            append_line(path, line, sync=sync)


def read_journal(path: Path) -> tuple[RunStart, list[IntervalStats]]:
    """The run's start and its completed intervals; a torn last line is left out, with a
    warning. Anything else unreadable is a :class:`~loadgen.base.errors.ConfigError`."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read a journal: {error}", file=str(path)) from None
    *lines, torn = data.split(b"\n")
    _check_start(path, _first_record(lines))
    if torn:  # no line end: the process died while writing it
        log.warning("%s: its last line is torn (the run died writing it): left out", path)
    intervals: list[IntervalStats] = []
    for number, line in enumerate(lines[1:], 2):
        try:
            record = json.loads(line)
            stats = stats_from_json(record, _unpacked)
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ConfigError(
                f"line {number} is not an interval record: {error!r}", file=str(path)
            ) from None
        if record.get("replacesLast") and intervals:
            intervals.pop()
        intervals.append(stats)
    return RunStart.from_json(json.loads(lines[0])), intervals


def _first_record(lines: list[bytes]) -> Any:
    try:
        return json.loads(lines[0]) if lines else None
    except ValueError:
        return None


def _check_start(path: Path, record: dict[str, Any]) -> None:
    if not isinstance(record, dict) or record.get("journal") != "loadgen":
        raise ConfigError(
            "not a loadgen journal (no start record)", file=str(path), allowed="a .journal"
        )
    if record.get("format") != FORMAT:
        raise ConfigError(
            "a journal format this loadgen cannot read",
            file=str(path),
            path="format",
            value=record.get("format"),
            allowed=[str(FORMAT)],
        )


def result_from_journal(path: Path) -> dict[str, Any]:
    """The TestResult of a run from its journal: what the run would have written had it ended
    after the journal's last interval (``incomplete: true``, ``stopReason: unfinished``)."""
    start, intervals = read_journal(path)
    return result_document(start, unfinished_outcome(start, intervals))
