"""Where a run keeps its intervals' histograms: on disk, so memory does not grow with run length.

A run keeps every interval until it ends (the result lists each one's percentiles and
histogram; the .hlog files hold them all). Packed (:func:`loadgen.base.hdr.pack`), one interval's
histograms still take ~50-70 KB at a few thousand msg/s, and a coordinator keeps the run's and
every worker's intervals: held in memory, they would grow it linearly with the run's length
(bench/results/soak.md "Soak: 15 minutes at 2000 msg/s"). Spilled, an interval costs memory for its
counters and a few offsets only; the packed bytes go to an unnamed temporary file in ``$TMPDIR``
(one per :class:`Spill`), which the OS frees once the last interval that refers to it is gone,
so a result handed to an embedding caller stays readable.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import IO

from loadgen.base import hdr
from loadgen.engine.stats import IntervalStats

log = logging.getLogger("loadgen.engine.spill")

Place = tuple[int, int]
"""Where packed bytes lie in a spill file: offset and length."""


class PackedHistograms(Mapping[str, hdr.Histogram]):
    """An interval's histograms packed in memory, unpacked when read: the fallback when the
    spill file cannot be written (a full disk must not end a run)."""

    def __init__(self, packed: Mapping[str, bytes]) -> None:
        self._packed = dict(packed)

    def __getitem__(self, metric: str) -> hdr.Histogram:
        return hdr.unpack(metric, self._packed[metric])

    def __iter__(self) -> Iterator[str]:
        return iter(self._packed)

    def __len__(self) -> int:
        return len(self._packed)


class SpilledHistograms(Mapping[str, hdr.Histogram]):
    """An interval's histograms in a spill file, read back and unpacked when asked for."""

    def __init__(self, spill: Spill, places: Mapping[str, Place]) -> None:
        self._spill = spill  # keeps the file open as long as this interval is referred to
        self._places = dict(places)

    def __getitem__(self, metric: str) -> hdr.Histogram:
        return hdr.unpack(metric, self._spill.read(self._places[metric]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._places)

    def __len__(self) -> int:
        return len(self._places)


class Spill:
    """An append-only store of packed histograms; safe to write and read from several threads."""

    def __init__(self, directory: str | None = None) -> None:
        """``directory`` defaults to ``$TMPDIR``; one that cannot take the file means the
        intervals stay in memory (packed), with a warning."""
        self._lock = threading.Lock()
        self._end = 0
        self._warned = False
        self._directory = directory or tempfile.gettempdir()
        self._file: IO[bytes] | None = None
        try:
            # open for the Spill's life, closed when it is collected (see the module docstring)
            self._file = tempfile.TemporaryFile(prefix="loadgen-spill-", dir=directory)  # noqa: SIM115
        except OSError as error:
            self._refused(error)

    def keep(self, stats: IntervalStats) -> IntervalStats:
        """``stats`` as kept for the rest of the run: its histograms spilled (already kept
        intervals are returned as they are)."""
        if isinstance(stats.histograms, SpilledHistograms | PackedHistograms):
            return stats
        packed = {metric: hdr.pack(histogram) for metric, histogram in stats.histograms.items()}
        if self._file is not None:
            try:
                places = {metric: self._append(data) for metric, data in packed.items()}
                return replace(stats, histograms=SpilledHistograms(self, places))
            except OSError as error:
                self._refused(error)
        return replace(stats, histograms=PackedHistograms(packed))

    def read(self, place: Place) -> bytes:
        offset, length = place
        assert self._file is not None, "nothing was spilled to a spill without a file"
        data = os.pread(self._file.fileno(), length, offset)
        if len(data) != length:
            raise OSError(f"spill file: {len(data)} of {length} bytes at offset {offset}")
        return data

    def _append(self, data: bytes) -> Place:
        assert self._file is not None
        with self._lock:
            offset = self._end
            written = os.pwrite(self._file.fileno(), data, offset)
            if written != len(data):  # a full disk may take part of it before refusing
                raise OSError(f"wrote {written} of {len(data)} bytes")
            self._end += written
        return offset, written

    def _refused(self, error: OSError) -> None:
        if not self._warned:
            log.warning(
                "cannot keep interval histograms on disk in %s (%s); keeping them in memory, "
                "which grows with the run's length",
                self._directory,
                error,
            )
            self._warned = True
