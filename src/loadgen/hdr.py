"""HdrHistograms the way loadgen keeps them: compact, mergeable, and Java-equal when read.

A histogram here is only its non-empty buckets (sorted counts-array indices and their counts)
in OMB's layout: microseconds, 5 significant digits, lowest 1, highest 60 s for publish metrics
and 12 h for end-to-end. The full counts array of such a histogram is 10–21 MB, so holding one
per interval per metric for a whole run would not fit; the sparse form is a few KB.

* :func:`record_ns` bins a whole interval of raw nanosecond values with numpy; the bucket
  arithmetic is HdrHistogram's own, so the counts are bit-identical to ``record_value``.
* :func:`encode` / :func:`decode` speak HdrHistogram's V2 compressed base64, which Java's
  ``Histogram.decodeFromCompressedByteBuffer`` and Python ``hdrh`` both read.
* :func:`value_at_percentile`, :func:`mean` and :func:`quantile_map` reproduce Java's
  ``getValueAtPercentile``, ``getMean`` and ``percentiles(100)`` iteration exactly (the ``hdrh``
  package rounds percentile targets differently, so it is not used for published numbers).
"""

from __future__ import annotations

import base64
import ctypes
import gc
import math
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from hdrh import codec
from hdrh.histogram import HdrHistogram
from pyhdrh import encode as varint_encode  # hdrh's own C encoder

SIGNIFICANT_DIGITS = 5
HIGHEST_TRACKABLE_US = {
    "publish": 60_000_000,
    "publishDelay": 60_000_000,
    "publishFromIntended": 60_000_000,
    "endToEnd": 43_200_000_000,
    "endToEndFromIntended": 43_200_000_000,
    "endToEndTailing": 43_200_000_000,
    "endToEndCatchUp": 43_200_000_000,
    "endToEndUncorrected": 43_200_000_000,
}
PERCENTILE_TICKS_PER_HALF_DISTANCE = 100
MERGE_BATCH = 64
WORD_SIZE = 8
"""Bytes per count in an hdrh histogram's counts array (int64), as the encoder reads it."""
PACK_HEADER = "<Icc"
""":func:`pack`'s header: bucket count, and the type codes of the steps and of the counts."""
FLOAT64_MANTISSA_BITS = 52
SPARSE_BELOW = 8
"""An interval with fewer values than 1/8 of the counts array is binned by sorting (2000
end-to-end values: 0.1 ms instead of 12 ms), a bigger one with ``bincount``."""


@dataclass(frozen=True, slots=True)
class Layout:
    """HdrHistogram's bucket geometry for one value range."""

    highest: int
    unit_magnitude: int
    sub_bucket_half_count_magnitude: int
    sub_bucket_half_count: int
    sub_bucket_mask: int
    counts_len: int

    def counts_index(self, values: np.ndarray) -> np.ndarray:
        """HdrHistogram's ``countsArrayIndex`` for every value (all >= 0).

        The bit length of ``value | sub_bucket_mask`` is read off its float64 exponent (exact
        below 2**53), and the steps run in place on one array: 1.8x faster than ``frexp`` and
        a temporary per step, the biggest part of binning an interval (bench/RESULTS.md)."""
        shift = (values | self.sub_bucket_mask).astype(np.float64).view(np.int64)
        shift >>= FLOAT64_MANTISSA_BITS  # biased exponent: bit length + 1022
        shift -= 1022 + self.sub_bucket_half_count_magnitude + 1  # bucket + unit magnitude
        index = values >> shift  # the sub-bucket
        shift -= self.unit_magnitude - 1  # bucket + 1
        shift <<= self.sub_bucket_half_count_magnitude  # the bucket's base index
        index += shift
        index -= self.sub_bucket_half_count
        return index

    def lowest_value(self, index: np.ndarray) -> np.ndarray:
        """``valueFromIndex``: the lowest value that lands in each counts index."""
        bucket = (index >> self.sub_bucket_half_count_magnitude) - 1
        sub_bucket = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count
        below = bucket < 0
        sub_bucket = np.where(below, sub_bucket - self.sub_bucket_half_count, sub_bucket)
        bucket = np.where(below, 0, bucket)
        return sub_bucket << (bucket + self.unit_magnitude)

    def range_size(self, index: np.ndarray) -> np.ndarray:
        """How many distinct values share each counts index."""
        bucket = np.maximum((index >> self.sub_bucket_half_count_magnitude) - 1, 0)
        return np.left_shift(np.int64(1), bucket + self.unit_magnitude)


@cache
def layout(metric: str) -> Layout:
    try:
        highest = HIGHEST_TRACKABLE_US[metric]
    except KeyError:
        raise ValueError(
            f"unknown metric {metric!r}; known: {sorted(HIGHEST_TRACKABLE_US)}"
        ) from None
    template = HdrHistogram(1, highest, SIGNIFICANT_DIGITS)
    return Layout(
        highest=highest,
        unit_magnitude=template.unit_magnitude,
        sub_bucket_half_count_magnitude=template.sub_bucket_half_count_magnitude,
        sub_bucket_half_count=template.sub_bucket_half_count,
        sub_bucket_mask=template.sub_bucket_mask,
        counts_len=template.counts_len,
    )


@dataclass(frozen=True, eq=False)
class Histogram:
    """One metric's non-empty buckets: sorted ``index`` with positive ``counts``."""

    metric: str
    index: np.ndarray
    counts: np.ndarray

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    @property
    def max(self) -> int:
        """Java ``getMaxValue``: highest equivalent value of the largest recorded value."""
        if not len(self.index):
            return 0
        last = self.index[-1:]
        geometry = layout(self.metric)
        return int(geometry.lowest_value(last)[0] + geometry.range_size(last)[0] - 1)

    @property
    def min(self) -> int:
        """Java ``getMinValue``: lowest equivalent value of the smallest recorded value."""
        if not len(self.index):
            return 0
        return int(layout(self.metric).lowest_value(self.index[:1])[0])


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
    """Build every metric's layout now, once per process (60–150 ms of CPU: hdrh allocates a
    counts array per template). Left to the first snapshot, that time is taken under the GIL
    while the producer loop should be sending.

    An hdrh histogram sits in a reference cycle, so its template outlives :func:`layout` until
    a collection; one runs here. Otherwise the producer loop's ``gc.freeze`` keeps the
    templates (~115 MB) for the whole run, and glibc, which raises its mmap threshold only when
    such big blocks are freed, then serves every snapshot's numpy temporaries by mmap: measured,
    later snapshots cost twice as much (bench/RESULTS.md, "Snapshot cost")."""
    built_before = layout.cache_info().currsize
    for metric in HIGHEST_TRACKABLE_US:
        layout(metric)
    if layout.cache_info().currsize > built_before:
        gc.collect()


def histogram_for(metric: str) -> Histogram:
    layout(metric)
    return Histogram(metric, np.empty(0, np.int64), np.empty(0, np.int64))


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


def merge(metric: str, histograms: Iterable[Histogram]) -> Histogram:
    """One histogram holding every count of ``histograms`` (all of ``metric``).

    They are taken :data:`MERGE_BATCH` at a time, so merging a long run's intervals as they
    are unpacked never holds more than a batch of them."""
    merged = histogram_for(metric)
    batch: list[Histogram] = []
    for histogram in histograms:
        if histogram.metric != metric:
            raise ValueError(f"cannot merge other metrics into {metric!r}")
        batch.append(histogram)
        if len(batch) == MERGE_BATCH:
            merged = _merge_parts(metric, [merged, *batch])
            batch = []
    return _merge_parts(metric, [merged, *batch])


def _merge_parts(metric: str, histograms: list[Histogram]) -> Histogram:
    parts = [h for h in histograms if len(h.index)]
    if not parts:
        return histogram_for(metric)
    if len(parts) == 1:
        return parts[0]
    index = np.concatenate([h.index for h in parts])
    counts = np.concatenate([h.counts for h in parts])
    unique, inverse = np.unique(index, return_inverse=True)
    summed = np.zeros(len(unique), dtype=np.int64)
    np.add.at(summed, inverse, counts)
    return Histogram(metric, unique, summed)


def pack(histogram: Histogram) -> bytes:
    """A lossless, compact byte form for keeping many histograms in memory (not a wire format;
    :func:`encode` is): bucket-index steps and counts in the narrowest unsigned type that holds
    them, zlib-compressed. ~20× smaller than the arrays, and unpacked in well under a ms."""
    steps = np.diff(histogram.index, prepend=0)
    step_type = np.min_scalar_type(int(steps.max(initial=0)))
    count_type = np.min_scalar_type(int(histogram.counts.max(initial=0)))
    header = struct.pack(PACK_HEADER, len(steps), step_type.char.encode(), count_type.char.encode())
    body = steps.astype(step_type).tobytes() + histogram.counts.astype(count_type).tobytes()
    return zlib.compress(header + body, 1)


def unpack(metric: str, data: bytes) -> Histogram:
    """The histogram :func:`pack` packed, as ``metric``."""
    raw = zlib.decompress(data)
    length, step_char, count_char = struct.unpack_from(PACK_HEADER, raw)
    step_type, count_type = np.dtype(step_char.decode()), np.dtype(count_char.decode())
    offset = struct.calcsize(PACK_HEADER)
    steps = np.frombuffer(raw, step_type, length, offset)
    counts = np.frombuffer(raw, count_type, length, offset + length * step_type.itemsize)
    return Histogram(metric, np.cumsum(steps, dtype=np.int64), counts.astype(np.int64))


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


def value_at_percentile(histogram: Histogram, percentile: float) -> int:
    """Java ``getValueAtPercentile``: the highest equivalent value of the bucket that reaches
    ``max(1, ceil(nextafter(p, -inf) / 100 × total))`` (the lowest equivalent for p = 0)."""
    total = histogram.total
    if total == 0:
        return 0
    requested = min(max(math.nextafter(percentile, -math.inf), 0.0), 100.0)
    target = max(1, math.ceil(requested / 100.0 * total))
    position = int(np.searchsorted(np.cumsum(histogram.counts), target, side="left"))
    index = histogram.index[position : position + 1]
    geometry = layout(histogram.metric)
    lowest = int(geometry.lowest_value(index)[0])
    if percentile == 0.0:
        return lowest
    return lowest + int(geometry.range_size(index)[0]) - 1


def mean(histogram: Histogram) -> float:
    """Java ``getMean``: Σ medianEquivalentValue × count / total, summed in value order."""
    total = histogram.total
    if total == 0:
        return 0.0
    geometry = layout(histogram.metric)
    medians = geometry.lowest_value(histogram.index) + (geometry.range_size(histogram.index) >> 1)
    running = 0.0
    for median, count in zip(medians.tolist(), histogram.counts.tolist(), strict=True):
        running += median * float(count)
    return running / total


def quantile_map(histogram: Histogram) -> dict[str, int]:
    """OMB's ``aggregated*Quantiles``: Java's ``percentiles(100)`` iteration, keyed by the
    cumulative percentage reached (as a string), valued by the bucket's highest equivalent value.
    """
    total = histogram.total
    if total == 0:
        return {}
    geometry = layout(histogram.metric)
    highest = geometry.lowest_value(histogram.index) + geometry.range_size(histogram.index) - 1
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


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """The numbers every report shows, in µs, all Java-equal."""

    count: int
    mean: float
    p50: int
    p75: int
    p95: int
    p99: int
    p999: int
    p9999: int
    max: int
    min: int


SUMMARY_PERCENTILES = {
    "p50": 50.0,
    "p75": 75.0,
    "p95": 95.0,
    "p99": 99.0,
    "p999": 99.9,
    "p9999": 99.99,
}


def summary(histogram: Histogram) -> LatencySummary:
    return LatencySummary(
        count=histogram.total,
        mean=mean(histogram),
        max=histogram.max,
        min=histogram.min,
        **{name: value_at_percentile(histogram, p) for name, p in SUMMARY_PERCENTILES.items()},
    )
