"""HdrHistograms the way loadgen records and stores them: compact, mergeable, Java-equal.

The arithmetic that needs only numpy (layouts, the sparse :class:`Histogram`, merges, Java-equal
percentiles, the V2 codec :func:`encode` / :func:`decode`) is :mod:`loadgen.base.hdr_core`,
re-exported here; this module adds:

* :func:`record_ns` bins a whole interval of raw nanosecond values with numpy; the bucket
  arithmetic is HdrHistogram's own, so the counts are bit-identical to ``record_value``.
* :func:`quantile_map` reproduces Java's ``percentiles(100)`` iteration exactly (the ``hdrh``
  package rounds percentile targets differently, so it is not used for published numbers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from loadgen.base.hdr_core import (
    HIGHEST_TRACKABLE_US,
    MERGE_BATCH,
    PERCENTILE_TICKS_PER_HALF_DISTANCE,
    SIGNIFICANT_DIGITS,
    SUMMARY_PERCENTILES,
    Histogram,
    LatencySummary,
    Layout,
    decode,
    decode_many,
    encode,
    histogram_for,
    layout,
    mean,
    merge,
    pack,
    summary,
    unpack,
    value_at_percentile,
)

__all__ = [
    "HIGHEST_TRACKABLE_US",
    "MERGE_BATCH",
    "SIGNIFICANT_DIGITS",
    "SUMMARY_PERCENTILES",
    "Histogram",
    "LatencySummary",
    "Layout",
    "decode",
    "decode_many",
    "encode",
    "histogram_for",
    "layout",
    "mean",
    "merge",
    "pack",
    "prepare_layouts",
    "quantile_map",
    "record_ns",
    "summary",
    "unpack",
    "value_at_percentile",
]

SPARSE_BELOW = 8
"""An interval with fewer values than 1/8 of the counts array is binned by sorting, a bigger one
with ``bincount``: sorting a few thousand values costs far less than filling a counts array of
millions, which keeps the stats tick on time in light runs (bench/results/memory-and-engine.md
"Engine cost of message ids")."""


def _from_counts_array(metric: str, dense: np.ndarray) -> Histogram:
    index = np.flatnonzero(dense != 0)  # a bool mask is scanned faster than the int64 array
    return Histogram(metric, index.astype(np.int64), dense[index].astype(np.int64))


def _from_indices(metric: str, indices: np.ndarray) -> Histogram:
    """Counts by sorting: for few values, far cheaper than a dense counts array of millions."""
    ordered = np.sort(indices)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, len(ordered)))
    return Histogram(metric, ordered[starts], counts.astype(np.int64))


def prepare_layouts() -> None:
    """Build every metric's layout now, once per process, not in the first snapshot."""
    for metric in HIGHEST_TRACKABLE_US:
        layout(metric)


def record_ns(metric: str, values_ns: Sequence[int] | np.ndarray) -> Histogram:
    """Bin raw nanosecond latencies as microseconds, clamped to the metric's range (as OMB).

    Negative values are the caller's to count (clock skew); passing one is a bug.
    """
    geometry = layout(metric)
    micros = np.asarray(values_ns, dtype=np.int64) // 1000
    if not len(micros):
        return histogram_for(metric)
    if micros.min() < 0:
        raise ValueError(f"{metric}: negative latency values must be filtered by the caller")
    np.minimum(micros, geometry.highest, out=micros)
    indices = geometry.counts_index(micros)
    if len(indices) * SPARSE_BELOW < geometry.counts_len:
        return _from_indices(metric, indices)
    dense = np.bincount(indices, minlength=geometry.counts_len)
    return _from_counts_array(metric, dense)


def quantile_map(histogram: Histogram) -> dict[str, int]:
    """OMB's ``aggregated*Quantiles``: Java's ``percentiles(100)`` iteration, keyed by the
    cumulative percentage reached (as a string), valued by the bucket's highest equivalent value.
    """
    total = histogram.total
    if total == 0:
        return {}
    highest = layout(histogram.metric).equivalents(histogram.index)[1]
    quantiles: dict[str, int] = {}
    level = 0.0
    cumulative = 0
    for value, count in zip(highest.tolist(), histogram.counts.tolist(), strict=True):
        cumulative += count
        reached = 100.0 * cumulative / total
        while reached >= level:
            quantiles[repr(reached)] = value
            if cumulative == total:
                break
            level = _next_percentile_level(level)
        if cumulative == total:
            quantiles["100.0"] = value
            break
    return quantiles


def _next_percentile_level(level: float) -> float:
    if level >= 100.0:
        return level
    halvings = int(math.log(100.0 / (100.0 - level)) / math.log(2))
    ticks = PERCENTILE_TICKS_PER_HALF_DISTANCE * math.pow(2, halvings + 1)
    return level + 100.0 / ticks
