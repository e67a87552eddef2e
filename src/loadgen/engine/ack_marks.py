"""When a lost message was acknowledged, to the stats interval: what puts a loss in a fault's
window (:mod:`loadgen.formats.fault_windows`).

After each interval a worker notes each of its producers' highest acknowledged id so far (a
mark). A lost id belongs to the first interval whose mark for its producer reaches it: its
acknowledgement came by that interval's end. Acknowledgements of one producer come nearly in
id order (out of order only across partitions, within a batch), so this is exact to the
interval but for those few.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

Marks = list[tuple[int, dict[int, int]]]
"""``[(interval end, epoch ms; {producer number: highest acknowledged id so far})]``."""


class AckMarks:
    """One worker's marks, noted after each interval."""

    def __init__(self) -> None:
        self.marks: Marks = []
        self._highest: dict[int, int] = {}

    def acknowledged(self, number: int, top: int) -> None:
        """Producer ``number``'s ids up to ``top`` were just acknowledged (some of them)."""
        self._highest[number] = max(self._highest.get(number, top), top)

    def interval_ended(self, end_ms: int) -> None:
        self.marks.append((end_ms, dict(self._highest)))

    def to_json(self) -> list[list[Any]]:
        return [[end_ms, {str(n): i for n, i in highest.items()}] for end_ms, highest in self.marks]


def merged_marks(
    parts: Iterable[Sequence[Sequence[Any]]],
) -> dict[int, tuple[list[int], list[int]]]:
    """Every worker's marks (their JSON) per producer number: interval ends and highest ids,
    in time order."""
    by_producer: dict[int, list[tuple[int, int]]] = {}
    for marks in parts:
        for end_ms, highest in marks:
            for number, top in highest.items():
                by_producer.setdefault(int(number), []).append((int(end_ms), int(top)))
    merged = {}
    for number, rows in by_producer.items():
        rows.sort()
        merged[number] = ([end for end, _ in rows], [top for _, top in rows])
    return merged


def lost_by_interval(
    ranges: Iterable[tuple[int, int, int]], marks: Mapping[int, tuple[list[int], list[int]]]
) -> dict[int, int]:
    """Lost ids, as ``(producer number, start, end)`` ranges ``[start, end)``, counted by the
    end (epoch ms) of the interval whose mark first reached them; ids past every mark go to the
    last one (acknowledged in the drain)."""
    counts: dict[int, int] = {}
    for number, start, end in ranges:
        found = marks.get(number)
        if found is None:
            continue
        times, highs = found
        edges = np.maximum.accumulate(np.asarray(highs, np.int64)) + 1  # exclusive per mark
        cut = np.clip(edges, start, end)
        lows = np.concatenate(([start], cut[:-1]))
        per_mark = cut - lows
        per_mark[-1] += end - max(int(cut[-1]), start)  # past every mark: the last interval
        for time_ms, count in zip(times, per_mark.tolist(), strict=True):
            if count:
                counts[time_ms] = counts.get(time_ms, 0) + count
    return counts
