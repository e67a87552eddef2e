"""The HdrHistogram arithmetic that needs nothing but numpy: metrics and their bucket layouts,
sparse histograms, exact merges, Java-equal percentiles and the V2 compressed codec.

It is split from :mod:`loadgen.base.hdr` (recording, Java's percentile iteration) because the
Spark pipeline ships it to executors that have no loadgen installed (:mod:`loadgen.pipeline.ship`):
it may import only the standard library and numpy. The codec is loadgen's own: ``hdrh`` (the
Python HdrHistogram package) is used only by the tests, which check both ways that it reads
what this writes and writes what this reads.

A histogram here is only its non-empty buckets (sorted counts-array indices and their counts)
in OMB's layout: microseconds, 5 significant digits, lowest 1, highest 60 s for publish metrics
and 12 h for the others (end-to-end, transactions). The full counts array of such a histogram
is 10–21 MB; the sparse form is a few KB.

The V2 codec (HdrHistogram's ``encodeIntoCompressedByteBuffer``): an 8-byte header
(compression cookie, length), then zlib of a 40-byte header and the counts as ZigZag LEB128
varints, a run of N empty buckets written as -N. :func:`encode` is byte-identical to ``hdrh``'s
output (checked by the unit tests); :func:`decode` reads ours, Java's and ``hdrh``'s, in
loadgen's layout only.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import numpy as np

PUBLISH = "publish"
PUBLISH_DELAY = "publishDelay"
PUBLISH_FROM_INTENDED = "publishFromIntended"
END_TO_END = "endToEnd"
END_TO_END_FROM_INTENDED = "endToEndFromIntended"
METRICS = (PUBLISH, PUBLISH_DELAY, PUBLISH_FROM_INTENDED, END_TO_END, END_TO_END_FROM_INTENDED)
END_TO_END_TAILING = "endToEndTailing"
END_TO_END_CATCH_UP = "endToEndCatchUp"
ROLE_METRICS = (END_TO_END_TAILING, END_TO_END_CATCH_UP)
"""End-to-end latency split by consumer role, recorded only when a run has catch-up
subscriptions (catch-up and mixed runs): ``endToEnd`` stays OMB's, over every subscription."""
END_TO_END_UNCORRECTED = "endToEndUncorrected"
"""End-to-end latency as the two clocks measured it, recorded only when the workers' clock
offsets corrected ``endToEnd`` (:mod:`loadgen.engine.skew`)."""
TRANSACTION_COMMIT = "transactionCommit"
TRANSACTION_ABORT = "transactionAbort"
TRANSACTION_METRICS = (TRANSACTION_COMMIT, TRANSACTION_ABORT)
"""How long each commit and abort call of a transactional producer took, recorded only when
its producers are transactional (:class:`loadgen.driver_api.TransactionalProducer`); one
value per transaction, so their counts are the transactions committed and aborted."""
ALL_METRICS = METRICS + ROLE_METRICS + (END_TO_END_UNCORRECTED,) + TRANSACTION_METRICS

SIGNIFICANT_DIGITS = 5
PUBLISH_HIGHEST_US = 60_000_000
END_TO_END_HIGHEST_US = 43_200_000_000
HIGHEST_TRACKABLE_US = {
    metric: PUBLISH_HIGHEST_US if metric.startswith("publish") else END_TO_END_HIGHEST_US
    for metric in ALL_METRICS
}
PERCENTILE_TICKS_PER_HALF_DISTANCE = 100
MERGE_BATCH = 64
FLOAT64_MANTISSA_BITS = 52
PACK_HEADER = "<Icc"
""":func:`pack`'s header: bucket count, and the type codes of the steps and of the counts."""


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
        below 2**53), and the steps run in place on one array."""
        shift = (values | self.sub_bucket_mask).astype(np.float64).view(np.int64)
        shift >>= FLOAT64_MANTISSA_BITS  # biased exponent: bit length + 1022
        shift -= 1022 + self.sub_bucket_half_count_magnitude + 1  # bucket + unit magnitude
        index = values >> shift  # the sub-bucket
        shift -= self.unit_magnitude - 1  # bucket + 1
        shift <<= self.sub_bucket_half_count_magnitude  # the bucket's base index
        index += shift
        index -= self.sub_bucket_half_count
        return index

    def bounds(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``valueFromIndex`` (the lowest value that lands in each counts index) and how many
        distinct values share it. With ``bucket = max((index >> m) - 1, 0)`` the sub-bucket
        is ``index - bucket × half count`` in every bucket, the first included."""
        bucket = index >> self.sub_bucket_half_count_magnitude
        bucket -= 1
        np.maximum(bucket, 0, out=bucket)
        sub_bucket = index - (bucket << self.sub_bucket_half_count_magnitude)
        bucket += self.unit_magnitude
        return sub_bucket << bucket, np.left_shift(1, bucket)

    def equivalents(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The lowest, highest and median equivalent value of each counts index. Below the
        second bucket (values up to 2 × the sub-bucket half count, 262 ms in µs at 5 digits,
        where most latencies are) each index is its own value: all three are ``index``."""
        if self.unit_magnitude == 0 and int(index.max(initial=0)) < 2 * self.sub_bucket_half_count:
            return index, index, index
        lowest, size = self.bounds(index)
        return lowest, lowest + size - 1, lowest + (size >> 1)


@cache
def layout(metric: str) -> Layout:
    """The geometry HdrHistogram computes for lowest 1, ``highest`` and 5 digits."""
    try:
        highest = HIGHEST_TRACKABLE_US[metric]
    except KeyError:
        raise ValueError(
            f"unknown metric {metric!r}; known: {sorted(HIGHEST_TRACKABLE_US)}"
        ) from None
    unit_magnitude = 0  # floor(log2(lowest)) for lowest 1
    single_unit_resolution = 2 * 10**SIGNIFICANT_DIGITS
    half_magnitude = max(math.ceil(math.log2(single_unit_resolution)), 1) - 1
    sub_bucket_count = 1 << (half_magnitude + 1)
    smallest_untrackable, buckets = sub_bucket_count << unit_magnitude, 1
    while smallest_untrackable <= highest:
        smallest_untrackable <<= 1
        buckets += 1
    return Layout(
        highest=highest,
        unit_magnitude=unit_magnitude,
        sub_bucket_half_count_magnitude=half_magnitude,
        sub_bucket_half_count=sub_bucket_count // 2,
        sub_bucket_mask=(sub_bucket_count - 1) << unit_magnitude,
        counts_len=(buckets + 1) * (sub_bucket_count // 2),
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
        return int(layout(self.metric).equivalents(self.index[-1:])[1][0])

    @property
    def min(self) -> int:
        """Java ``getMinValue``: lowest equivalent value of the smallest recorded value."""
        if not len(self.index):
            return 0
        return int(layout(self.metric).equivalents(self.index[:1])[0][0])


def histogram_for(metric: str) -> Histogram:
    layout(metric)
    return Histogram(metric, np.empty(0, np.int64), np.empty(0, np.int64))


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
    order = np.argsort(index, kind="stable")
    index = index[order]
    firsts = np.flatnonzero(np.diff(index, prepend=-1))  # where each bucket's run starts
    summed = np.add.reduceat(np.concatenate([h.counts for h in parts])[order], firsts)
    return Histogram(metric, index[firsts], summed)


def pack(histogram: Histogram) -> bytes:
    """A lossless, compact byte form for keeping many histograms in memory or state (not a wire
    format; :func:`encode` is): bucket-index steps and counts in the narrowest unsigned type
    that holds them, zlib-compressed. ~20× smaller than the arrays, unpacked in well under a ms."""
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


@cache
def _fractions(percentiles: tuple[float, ...]) -> np.ndarray:
    """``nextafter(p, -inf) / 100`` for each percentile, clamped to [0, 1]."""
    requested = [min(max(math.nextafter(p, -math.inf), 0.0), 100.0) for p in percentiles]
    return np.array(requested, np.float64) / 100.0


def _percentile_targets(total: int, percentiles: list[float]) -> np.ndarray:
    """Java's rank for each percentile: ``max(1, ceil(nextafter(p, -inf) / 100 × total))``
    (the same float64 products and ceilings as Java's, element by element)."""
    return np.maximum(np.ceil(_fractions(tuple(percentiles)) * float(total)), 1)


def _at_percentiles(
    histogram: Histogram, lowest: np.ndarray, highest: np.ndarray, percentiles: list[float]
) -> list[int]:
    """Java ``getValueAtPercentile`` for each of ``percentiles``, given every bucket's lowest
    and highest equivalent value: the highest of the bucket that reaches the rank (the lowest
    for p = 0)."""
    total = int(histogram.counts.sum())
    if total == 0:
        return [0] * len(percentiles)
    positions = np.searchsorted(
        np.cumsum(histogram.counts), _percentile_targets(total, percentiles), side="left"
    ).tolist()
    return [
        int(lowest[at]) if p == 0.0 else int(highest[at])
        for p, at in zip(percentiles, positions, strict=True)
    ]


def values_at_percentiles(histogram: Histogram, percentiles: list[float]) -> list[int]:
    """Java ``getValueAtPercentile`` for each of ``percentiles``."""
    lowest, highest, _ = layout(histogram.metric).equivalents(histogram.index)
    return _at_percentiles(histogram, lowest, highest, percentiles)


def value_at_percentile(histogram: Histogram, percentile: float) -> int:
    """Java ``getValueAtPercentile`` for one percentile."""
    return values_at_percentiles(histogram, [percentile])[0]


def mean(histogram: Histogram) -> float:
    """Java ``getMean``: Σ medianEquivalentValue × count / total, summed in value order (a
    cumulative sum adds one term at a time, as Java's loop does; ``np.sum`` would pair them)."""
    total = int(histogram.counts.sum())
    if total == 0:
        return 0.0
    middle = layout(histogram.metric).equivalents(histogram.index)[2]
    terms = middle.astype(np.float64) * histogram.counts.astype(np.float64)
    return float(np.cumsum(terms)[-1]) / total


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
    """Count, mean, min, max and :data:`SUMMARY_PERCENTILES`, from one pass over the buckets."""
    return summaries([histogram])[0]


def summaries(histograms: list[Histogram]) -> list[LatencySummary]:
    """:func:`summary` of each histogram, computed over all of them at once: one numpy call
    per step for the lot, not per histogram (the bucket geometry below the highest trackable
    value is the same for every metric). Only the mean is summed per histogram, from its first
    bucket, as Java sums it."""
    lengths = np.array([len(h.index) for h in histograms], np.int64)
    if not lengths.any():
        return [LatencySummary(0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0) for _ in histograms]
    geometry = layout(histograms[0].metric)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    index = np.concatenate([h.index for h in histograms])
    counts = np.concatenate([h.counts for h in histograms])
    lowest, highest, middle = geometry.equivalents(index)
    ranks = np.cumsum(counts)
    before = np.concatenate(([0], ranks))[starts]
    totals = np.concatenate(([0], ranks))[ends] - before
    fractions = _fractions(tuple(SUMMARY_PERCENTILES.values()))
    targets = np.maximum(np.ceil(fractions[None, :] * totals[:, None].astype(np.float64)), 1)
    positions = np.searchsorted(ranks, before[:, None] + targets.astype(np.int64), side="left")
    at = np.minimum(positions, max(len(index) - 1, 0))
    terms = middle.astype(np.float64) * counts.astype(np.float64)
    sums = _sums_in_order(terms, starts, lengths).tolist()
    percentiles = highest[at].tolist()
    maxima = highest[ends - 1].tolist()  # of an empty one: another's, not used
    minima = lowest[np.minimum(starts, len(lowest) - 1)].tolist()
    return [
        LatencySummary(total, sums[n] / total, *percentiles[n], max=maxima[n], min=minima[n])
        if total
        else LatencySummary(0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0)
        for n, total in enumerate(totals.tolist())
    ]


SUM_BLOCK = 1 << 20
"""Cells of the zero-padded table :func:`_sums_in_order` sums at a time (8 MiB of float64)."""
SUM_ROWS = 256
"""Histograms per table at most: its width is the longest one's, so rows of like length."""


def _sums_in_order(terms: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The sum of each segment of ``terms``, added one term at a time from its first, as
    Java's loop adds them (a difference of one prefix sum over all would round otherwise).
    The segments, shortest first, are rows of zero-padded tables accumulated along the rows:
    adding 0.0 after a row's last term leaves its sum as it is."""
    sums = np.zeros(len(lengths), np.float64)
    order = np.argsort(lengths, kind="stable")
    ordered = lengths[order]
    first = int(np.searchsorted(ordered, 1))  # empty ones sum to 0.0
    while first < len(order):
        widest = int(ordered[min(first + SUM_ROWS, len(order)) - 1])
        rows = order[first : first + max(min(SUM_ROWS, SUM_BLOCK // widest), 1)]
        width = int(lengths[rows].max())
        column = np.arange(width)
        filled = column[None, :] < lengths[rows][:, None]
        cells = np.where(filled, starts[rows][:, None] + column[None, :], 0)
        table = np.where(filled, terms[cells], 0.0)
        sums[rows] = np.add.accumulate(table, axis=1)[:, -1]
        first += len(rows)
    return sums


COMPRESSION_COOKIE = 0x1C849304 | 0x10
ENCODING_COOKIE = 0x1C849303 | 0x10
OUTER = struct.Struct(">II")
INNER = struct.Struct(">IIIIqqd")
MAX_VARINT_BYTES = 8
"""Counts and runs below 2**56; longer varints (Java's 9-byte form) are refused."""
THRESHOLDS = np.uint64(1) << (np.arange(1, MAX_VARINT_BYTES, dtype=np.uint64) * np.uint64(7))
"""2**7, 2**14, ...: a value at or above the k-th needs k + 1 varint bytes."""


def encode(histogram: Histogram) -> str:
    """HdrHistogram V2 compressed base64, from the non-empty buckets alone (no dense array)."""
    geometry = layout(histogram.metric)
    payload = _varints(_interleave(histogram.index, histogram.counts))
    inner = INNER.pack(
        ENCODING_COOKIE, len(payload), 0, SIGNIFICANT_DIGITS, 1, geometry.highest, 1.0
    )
    compressed = zlib.compress(inner + payload)
    return base64.b64encode(OUTER.pack(COMPRESSION_COOKIE, len(compressed)) + compressed).decode()


def _interleave(index: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The signed stream: before each bucket its run of N empty buckets as -N (``hdrh`` writes
    -1 for a single one, where Java writes 0; the decoder takes both)."""
    gaps = np.diff(index, prepend=-1) - 1
    pairs = np.column_stack([-gaps, counts])
    keep = np.column_stack([gaps > 0, np.ones(len(index), bool)])
    return pairs[keep]  # row by row: gap (if any), then count


def _varints(values: np.ndarray) -> bytes:
    """The ZigZag LEB128 bytes of ``values``, written one byte position at a time: most values
    take one byte, so the later positions touch only the few longer ones."""
    zigzag = ((values << 1) ^ (values >> 63)).astype(np.uint64)
    largest = int(zigzag.max(initial=0))
    if largest >> (7 * MAX_VARINT_BYTES):
        raise ValueError("a count too large for the sparse encoder")
    lengths = 1 + np.searchsorted(THRESHOLDS, zigzag, side="right")
    starts = np.cumsum(lengths) - lengths
    out = np.empty(int(lengths.sum()), np.uint8)
    longer = np.arange(len(zigzag))
    for k in range(max(largest.bit_length() - 1, 0) // 7 + 1):
        if k:
            longer = longer[lengths[longer] > k]
        group = (zigzag[longer] >> np.uint64(7 * k)) & np.uint64(0x7F)
        group |= np.where(lengths[longer] > k + 1, np.uint64(0x80), np.uint64(0))
        out[starts[longer] + k] = group
    return out.tobytes()


def _payload(metric: str, text: str) -> bytes:
    """The varint payload of a V2 compressed base64 histogram in ``metric``'s layout; anything
    else (another range or precision, a normalizing offset) is a ValueError."""
    raw = base64.b64decode(text, validate=True)
    cookie, length = OUTER.unpack_from(raw)
    if cookie != COMPRESSION_COOKIE or length != len(raw) - OUTER.size:
        raise ValueError("not an HdrHistogram V2 compressed histogram (cookie or length)")
    body = zlib.decompress(raw[OUTER.size :])
    inner, payload_len, offset, digits, lowest, highest, _ = INNER.unpack_from(body)
    if inner != ENCODING_COOKIE or payload_len != len(body) - INNER.size:
        raise ValueError("not an HdrHistogram V2 payload (cookie or length)")
    geometry = layout(metric)
    if (offset, digits, lowest, highest) != (0, SIGNIFICANT_DIGITS, 1, geometry.highest):
        raise ValueError(
            f"{metric}: expected a histogram up to {geometry.highest} µs with "
            f"{SIGNIFICANT_DIGITS} digits, lowest 1 and no offset; got {highest} with {digits}, "
            f"lowest {lowest}, offset {offset}"
        )
    payload = body[INNER.size :]
    if payload and payload[-1] >= 0x80:
        raise ValueError("the varint stream ends mid-value")
    return payload


def decode(metric: str, text: str) -> Histogram:
    """A V2 compressed base64 histogram in ``metric``'s layout (a ValueError for any other)."""
    result = decode_many([metric], [text])[0]
    if isinstance(result, Exception):
        raise result
    return result


def decode_many(metrics: list[str], texts: list[str]) -> list[Histogram | Exception]:
    """:func:`decode` of each (metric, text) pair, the histogram or the error that ``decode``
    would raise. The varints of all of them are read in one pass of numpy calls, so a task
    merging thousands of landing lines pays numpy's per-call cost once, not per line."""
    found: list[Histogram | Exception | None] = []
    payloads: list[bytes] = []
    for metric, text in zip(metrics, texts, strict=True):
        try:
            payloads.append(_payload(metric, text))
            found.append(None)  # read below
        except Exception as error:  # base64, zlib and struct errors too: all say "unreadable"
            payloads.append(b"")
            found.append(error if isinstance(error, ValueError) else ValueError(str(error)))
    data = np.frombuffer(b"".join(payloads), np.uint8)
    if not len(data):
        return [histogram_for(m) if r is None else r for m, r in zip(metrics, found, strict=True)]
    try:
        ends, values = _read_varints(data)
    except ValueError as error:  # one histogram's 9-byte varint: find it, read the others
        if len(texts) == 1:
            return [error]
        return [decode_many([m], [t])[0] for m, t in zip(metrics, texts, strict=True)]
    sizes = np.fromiter(map(len, payloads), np.int64, len(payloads))
    owner = np.repeat(np.arange(len(payloads), dtype=np.int32), sizes)  # of each byte
    line = owner[ends]  # the histogram of each varint (a payload ends with a varint's end)
    steps = np.where(values < 0, -values, 1)
    position = np.cumsum(steps) - steps
    first = np.searchsorted(line, np.arange(len(payloads)), side="left")
    position -= position[np.minimum(first, len(position) - 1)][line]
    kept = values > 0
    bounds = np.searchsorted(line[kept], np.arange(len(payloads) + 1), side="left").tolist()
    index, counts = position[kept], values[kept]
    results: list[Histogram | Exception] = []
    for n, result in enumerate(found):
        low, high = bounds[n], bounds[n + 1]
        if result is not None:
            results.append(result)
        elif low == high:
            results.append(histogram_for(metrics[n]))
        elif index[high - 1] >= (size := layout(metrics[n]).counts_len):
            results.append(ValueError(f"{metrics[n]}: a bucket beyond the counts array ({size})"))
        else:
            results.append(Histogram(metrics[n], index[low:high], counts[low:high]))
    return results


def _read_varints(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each value of a ZigZag LEB128 stream (that ends at a value's last byte) ends, and
    the signed values. Nearly all are one byte, their own value: only the longer ones are read
    byte by byte, the k-th byte of each in the k-th step."""
    ends = np.flatnonzero(data < 0x80)
    zigzag = data[ends].astype(np.int64)
    if len(ends) < len(data):
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        lengths = ends - starts
        longer = np.flatnonzero(lengths)
        lengths, starts = lengths[longer] + 1, starts[longer]
        longest = int(lengths.max())
        if longest > MAX_VARINT_BYTES:
            raise ValueError("a varint of 9 bytes (a count of 2**56 or more): not supported")
        value = (data[starts] & 0x7F).astype(np.int64)
        for k in range(1, longest):
            has = np.flatnonzero(lengths > k)
            value[has] |= (data[starts[has] + k] & 0x7F).astype(np.int64) << (7 * k)
        zigzag[longer] = value
    return ends, (zigzag >> 1) ^ -(zigzag & 1)
