"""HdrHistogram V2 compressed base64, read and written straight from and to the sparse form.

:func:`loadgen.hdr.encode` / :func:`loadgen.hdr.decode` go through ``hdrh``'s dense counts
array: 12 h at 5 digits is millions of counters, ~9 ms per call for an end-to-end histogram.
The pipeline does one decode per landing line and one encode per emitted row, so that array was
most of the live job's CPU. Here the varint stream is built and parsed with numpy over the
non-empty buckets only (~0.1 ms), byte-identical to ``hdrh``'s output (checked by the unit
tests), so the tables still hold exactly the result file's strings.

Wire format (HdrHistogram's ``encodeIntoCompressedByteBuffer``): an 8-byte header (compression
cookie, length), then zlib of a 40-byte header and the counts as ZigZag LEB128 varints, a run of
N empty buckets written as -N.
"""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np

from loadgen import hdr

COMPRESSION_COOKIE = 0x1C849304 | 0x10
ENCODING_COOKIE = 0x1C849303 | 0x10
OUTER = struct.Struct(">II")
INNER = struct.Struct(">IIIIqqd")
MAX_VARINT_BYTES = 8
"""Counts and runs below 2**56; longer varints (Java's 9-byte form) are left to ``hdrh``."""


def encode(histogram: hdr.Histogram) -> str:
    """What :func:`loadgen.hdr.encode` returns for ``histogram``, without a dense array."""
    geometry = hdr.layout(histogram.metric)
    values = _interleave(histogram.index, histogram.counts)
    payload = _varints(values)
    inner = INNER.pack(
        ENCODING_COOKIE, len(payload), 0, hdr.SIGNIFICANT_DIGITS, 1, geometry.highest, 1.0
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


THRESHOLDS = np.uint64(1) << (np.arange(1, MAX_VARINT_BYTES, dtype=np.uint64) * np.uint64(7))
"""2**7, 2**14, ...: a value at or above the k-th needs k + 1 varint bytes."""


def _varints(values: np.ndarray) -> bytes:
    zigzag = ((values << 1) ^ (values >> 63)).astype(np.uint64)
    if len(zigzag) and int(zigzag.max()) >> (7 * MAX_VARINT_BYTES):
        raise ValueError("a count too large for the sparse encoder")
    lengths = 1 + (zigzag[:, None] >= THRESHOLDS).sum(axis=1)
    shifts = np.arange(MAX_VARINT_BYTES, dtype=np.uint64) * np.uint64(7)
    groups = (zigzag[:, None] >> shifts) & np.uint64(0x7F)
    position = np.arange(MAX_VARINT_BYTES)
    groups |= np.where(position < lengths[:, None] - 1, np.uint64(0x80), np.uint64(0))
    return groups[position < lengths[:, None]].astype(np.uint8).tobytes()


def decode(metric: str, text: str) -> hdr.Histogram:
    """What :func:`loadgen.hdr.decode` returns, read from the varints; histograms in any other
    layout (another lowest value, a normalizing offset, 9-byte varints) go to it unchanged."""
    raw = base64.b64decode(text, validate=True)
    cookie, length = OUTER.unpack_from(raw)
    if cookie != COMPRESSION_COOKIE or length != len(raw) - OUTER.size:
        raise ValueError("not an HdrHistogram V2 compressed histogram (cookie or length)")
    body = zlib.decompress(raw[OUTER.size :])
    inner, payload_len, offset, digits, lowest, highest, _ = INNER.unpack_from(body)
    if inner != ENCODING_COOKIE or payload_len != len(body) - INNER.size:
        raise ValueError("not an HdrHistogram V2 payload (cookie or length)")
    geometry = hdr.layout(metric)
    if (offset, digits, lowest, highest) != (0, hdr.SIGNIFICANT_DIGITS, 1, geometry.highest):
        return hdr.decode(metric, text)
    values = _read_varints(np.frombuffer(body, np.uint8, offset=INNER.size))
    if values is None:
        return hdr.decode(metric, text)
    steps = np.where(values < 0, -values, 1)
    positions = np.cumsum(steps) - steps
    kept = values > 0
    index, counts = positions[kept], values[kept]
    if len(index) and index[-1] >= geometry.counts_len:
        raise ValueError(f"{metric}: a bucket beyond the counts array ({geometry.counts_len})")
    return hdr.Histogram(metric, index.astype(np.int64), counts.astype(np.int64))


def _read_varints(data: np.ndarray) -> np.ndarray | None:
    """The signed values of a ZigZag LEB128 stream; None for a form this reader leaves out."""
    if not len(data):
        return np.empty(0, np.int64)
    ends = np.flatnonzero(data < 0x80)
    if not len(ends) or ends[-1] != len(data) - 1:
        raise ValueError("the varint stream ends mid-value")
    starts = np.concatenate(([0], ends[:-1] + 1))
    if int((ends - starts).max()) >= MAX_VARINT_BYTES:
        return None
    owner = np.repeat(np.arange(len(starts)), ends - starts + 1)
    position = np.arange(len(data)) - starts[owner]
    parts = (data & 0x7F).astype(np.uint64) << (position.astype(np.uint64) * np.uint64(7))
    zigzag = np.add.reduceat(parts, starts)
    return (zigzag >> np.uint64(1)).astype(np.int64) ^ -(zigzag & np.uint64(1)).astype(np.int64)
