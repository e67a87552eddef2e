"""HdrHistograms the way loadgen records and stores them: compact, mergeable, Java-equal.

The arithmetic that needs only numpy (layouts, the sparse :class:`Histogram`, merges, Java-equal
percentiles, a numpy V2 codec) is :mod:`loadgen.base.hdr_core`, re-exported here; this module adds:

* :func:`record_ns` bins a whole interval of raw nanosecond values with numpy; the bucket
  arithmetic is HdrHistogram's own, so the counts are bit-identical to ``record_value``.
* :func:`encode` / :func:`decode` speak HdrHistogram's V2 compressed base64 through ``hdrh``
  (its C varint encoder; any layout Java or OMB writes is read).
* :func:`quantile_map` reproduces Java's ``percentiles(100)`` iteration exactly (the ``hdrh``
  package rounds percentile targets differently, so it is not used for published numbers).
"""

from __future__ import annotations

import base64
import ctypes
import math
import zlib
from collections.abc import Sequence

import numpy as np
from hdrh import codec
from hdrh.histogram import HdrHistogram
from pyhdrh import encode as varint_encode  # hdrh's own C encoder

from loadgen.base.hdr_core import (
    HIGHEST_TRACKABLE_US,
    MERGE_BATCH,
    PERCENTILE_TICKS_PER_HALF_DISTANCE,
    SIGNIFICANT_DIGITS,
    SUMMARY_PERCENTILES,
    Histogram,
    LatencySummary,
    Layout,
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

WORD_SIZE = 8
"""Bytes per count in an hdrh histogram's counts array (int64), as the encoder reads it."""
SPARSE_BELOW = 8
"""An interval with fewer values than 1/8 of the counts array is binned by sorting (2000
end-to-end values: 0.1 ms instead of 12 ms), a bigger one with ``bincount``."""


def _from_counts_array(metric: str, dense: np.ndarray) -> Histogram:
    index = np.flatnonzero(dense != 0)  # ~5x faster than flatnonzero on the int64 array
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


def _release(dense: HdrHistogram) -> None:
    """Free ``dense``'s counts now. An hdrh histogram and its encoder refer to each other, so
    its counts array (megabytes at 12 h and 5 digits) would wait for the cyclic garbage
    collector, which large ctypes arrays never prompt: a long run's memory grew by hundreds of
    MB a minute (bench/soak.py) until it did run."""
    dense.encoder = None


def encode(histogram: Histogram) -> str:
    """HdrHistogram V2 compressed encoding, base64 (what OMB's workers put on the wire).

    Byte for byte what ``hdrh``'s ``HdrHistogram.encode`` writes (its own varint encoder, the
    same headers and zlib level), but from a counts array that ends at the largest recorded
    value: the encoding stops there anyway, and the whole array (10-21 MB, zeroed for every
    call) made each encode cost ~4 ms, most of a run's per-interval journal write."""
    relevant = int(histogram.index[-1]) + 1 if len(histogram.index) else 0
    counts = np.zeros(relevant, dtype=np.int64)
    counts[histogram.index] = histogram.counts
    room = relevant * (WORD_SIZE + 1)  # hdrh's bound: a varint takes a byte more than a word
    # a numpy buffer, not ctypes.create_string_buffer: that makes a ctypes type per size, which
    # only the cyclic collector frees (held off by the producer loop: RSS grew ~3 KB a size)
    buffer = np.empty(codec.payload_header_size + room, dtype=np.uint8)
    start = buffer.ctypes.data + codec.payload_header_size
    written = varint_encode(counts.ctypes.data, relevant, WORD_SIZE, start, room)
    header = codec.PayloadHeader(
        cookie=codec.get_encoding_cookie(),
        payload_len=written,
        normalizing_index_offset=0,
        significant_figures=SIGNIFICANT_DIGITS,
        lowest_trackable_value=1,
        highest_trackable_value=layout(histogram.metric).highest,
        conversion_ratio_bits=1,
    )
    ctypes.memmove(buffer.ctypes.data, ctypes.addressof(header), codec.payload_header_size)
    compressed = zlib.compress(buffer[: codec.payload_header_size + written].tobytes())
    outer = codec.ExternalHeader(cookie=codec.get_compression_cookie(), length=len(compressed))
    return base64.b64encode(bytes(outer) + compressed).decode("ascii")


def decode(metric: str, text: str) -> Histogram:
    """Read a base64 V2 histogram (ours, OMB's or Java's) as ``metric``."""
    decoded = HdrHistogram.decode(text)
    try:
        geometry = layout(metric)
        if (decoded.highest_trackable_value, decoded.significant_figures) != (
            geometry.highest,
            SIGNIFICANT_DIGITS,
        ):
            raise ValueError(
                f"{metric}: expected a histogram up to {geometry.highest} µs with "
                f"{SIGNIFICANT_DIGITS} digits, got {decoded.highest_trackable_value} with "
                f"{decoded.significant_figures}"
            )
        dense = np.ctypeslib.as_array(decoded.counts)[: decoded.counts_len]
        return _from_counts_array(metric, dense)
    finally:
        _release(decoded)


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
