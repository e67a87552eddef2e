"""loadgen.base.hdr_core's numpy V2 codec (the only one loadgen runs) against hdrh's."""

import base64
import struct
import zlib

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from loadgen.base import hdr
from loadgen.base import hdr_core as codec
from loadgen.engine.stats import END_TO_END, PUBLISH, PUBLISH_DELAY


def hdrh_text(histogram: hdr.Histogram) -> str:
    """The same buckets, encoded by hdrh (the Python HdrHistogram package)."""
    geometry = hdr.layout(histogram.metric)
    reference = HdrHistogram(1, geometry.highest, hdr.SIGNIFICANT_DIGITS)
    lowest = geometry.equivalents(histogram.index)[0]
    for value, count in zip(lowest.tolist(), histogram.counts.tolist(), strict=True):
        reference.record_value(value, count)
    return reference.encode().decode("ascii")


@pytest.mark.parametrize("metric", [PUBLISH, PUBLISH_DELAY, END_TO_END])
@pytest.mark.parametrize("size", [0, 1, 7, 20_000])
@pytest.mark.parametrize("sigma", [0.3, 3.0])
def test_encode_is_byte_identical_and_decode_gives_the_same_buckets(metric, size, sigma):
    values = np.random.default_rng(size).lognormal(12, sigma, size).astype(np.int64)
    histogram = hdr.record_ns(metric, values)
    text = hdrh_text(histogram)
    assert codec.encode(histogram) == text
    decoded = codec.decode(metric, text)
    assert decoded.index.tolist() == histogram.index.tolist()
    assert decoded.counts.tolist() == histogram.counts.tolist()


def test_single_empty_buckets_and_large_counts_round_trip():
    index = np.array([0, 2, 4, 5, 9000], np.int64)  # gaps of one bucket: hdrh writes -1
    counts = np.array([1, 2**40, 3, 127, 128], np.int64)
    histogram = hdr.Histogram(PUBLISH, index, counts)
    text = codec.encode(histogram)
    assert text == hdrh_text(histogram)
    assert codec.decode(PUBLISH, text).counts.tolist() == counts.tolist()


def java_style(histogram: hdr.Histogram) -> str:
    """The same histogram as Java writes it: one empty bucket as 0, not as -1."""
    raw = base64.b64decode(codec.encode(histogram))
    body = zlib.decompress(raw[8:])
    payload = body[40:].replace(b"\x01", b"\x00")  # zigzag(-1) -> 0; counts here are not 1
    inner = body[:4] + struct.pack(">I", len(payload)) + body[8:40] + payload
    packed = zlib.compress(inner)
    return base64.b64encode(struct.pack(">II", codec.COMPRESSION_COOKIE, len(packed)) + packed)


def test_a_single_empty_bucket_written_as_zero_is_read_too():
    histogram = hdr.Histogram(PUBLISH, np.array([1, 3], np.int64), np.array([5, 6], np.int64))
    decoded = codec.decode(PUBLISH, java_style(histogram).decode())
    assert decoded.index.tolist() == [1, 3] and decoded.counts.tolist() == [5, 6]


@pytest.mark.parametrize(
    "text",
    ["bm9wZQ==", "not base64!", base64.b64encode(b"\x1c\x84\x93\x14\x00\x00\x00\x05xx").decode()],
)
def test_what_is_not_a_histogram_raises_for_the_merge_to_quarantine(text):
    with pytest.raises(Exception):  # noqa: B017 - any error: the merge quarantines on all
        codec.decode(PUBLISH, text)


def test_another_layout_is_refused_like_loadgen_hdr_does():
    text = hdr.encode(hdr.record_ns(END_TO_END, [5_000_000]))
    with pytest.raises(ValueError, match="expected a histogram up to"):
        codec.decode(PUBLISH, text)


def test_decoding_many_at_once_equals_decoding_each_and_keeps_errors_to_their_line():
    rng = np.random.default_rng(5)
    metrics = [PUBLISH, END_TO_END, PUBLISH_DELAY, END_TO_END, PUBLISH]
    histograms = [
        hdr.record_ns(metric, rng.lognormal(12, 2, size).astype(np.int64))
        for metric, size in zip(metrics, [0, 1, 500, 3000, 20], strict=True)
    ]
    texts = [hdr.encode(h) for h in histograms]
    bad = ["bm9wZQ==", hdr.encode(hdr.record_ns(END_TO_END, [5_000_000]))]  # garbage, a layout
    found = codec.decode_many([*metrics, PUBLISH, PUBLISH], [*texts, *bad])
    for histogram, decoded in zip(histograms, found, strict=False):
        assert decoded.index.tolist() == histogram.index.tolist()
        assert decoded.counts.tolist() == histogram.counts.tolist()
    assert isinstance(found[-2], ValueError) and isinstance(found[-1], ValueError)
    assert "expected a histogram up to" in str(found[-1])


def test_a_count_of_2_to_the_56_is_refused_for_its_line_only():
    huge = HdrHistogram(1, hdr.layout(PUBLISH).highest, hdr.SIGNIFICANT_DIGITS)
    huge.record_value(3, 2**56)  # hdrh writes Java's 9-byte varint; loadgen's encoder refuses it
    fine = hdr.record_ns(PUBLISH, [1000, 2000])
    found = codec.decode_many([PUBLISH, PUBLISH], [huge.encode().decode(), hdr.encode(fine)])
    assert isinstance(found[0], ValueError) and "9 bytes" in str(found[0])
    assert found[1].total == 2


@pytest.mark.parametrize(
    ("block", "rows"), [(codec.SUM_BLOCK, codec.SUM_ROWS), (1, 1), (3000, 2)]
)  # the means' tables: as shipped, a row each, and two rows of a bounded size
def test_summaries_of_many_equal_each_histograms_java_equal_numbers(block, rows, monkeypatch):
    monkeypatch.setattr(codec, "SUM_BLOCK", block)
    monkeypatch.setattr(codec, "SUM_ROWS", rows)
    rng = np.random.default_rng(9)
    empty = hdr.histogram_for(END_TO_END)
    histograms = [empty] + [
        hdr.record_ns(metric, rng.lognormal(13, sigma, size).astype(np.int64))
        for metric, sigma, size in [
            (END_TO_END, 1.0, 1),
            (PUBLISH, 2.0, 5000),
            (END_TO_END, 3.0, 777),
        ]
    ]
    histograms.insert(2, empty)
    histograms.append(empty)
    for histogram, numbers in zip(histograms, codec.summaries(histograms), strict=True):
        assert numbers.count == histogram.total
        assert numbers.mean == codec.mean(histogram)  # Java's sum order: checked against Java
        assert (numbers.min, numbers.max) == (histogram.min, histogram.max)
        for name, percentile in codec.SUMMARY_PERCENTILES.items():
            assert getattr(numbers, name) == codec.value_at_percentile(histogram, percentile)


def test_varints_of_every_length_are_leb128_of_their_zigzag_and_read_back():
    values = np.array([0, -1, 63, -64, 64, 300, -300, 2**14, -(2**27), 2**27, 2**34, 2**41, 2**48])
    written = codec._varints(values)
    assert written[:6] == bytes([0x00, 0x01, 0x7E, 0x7F, 0x80, 0x01])  # 0, -1, 63, -64, 64
    assert written[6:8] == bytes([0xD8, 0x04])  # 300: zigzag 600
    ends, read = codec._read_varints(np.frombuffer(written, np.uint8))
    assert read.tolist() == values.tolist() and ends[-1] == len(written) - 1
    assert np.diff(ends, prepend=-1).tolist() == [1, 1, 1, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize("top", [2**18 - 1, 2**18, 3 * 2**18])
def test_bucket_equivalents_below_the_second_bucket_are_the_index_itself_and_exact_above(top):
    geometry = codec.layout(END_TO_END)
    index = np.unique(np.r_[0, 1, 17_519, np.arange(top - 5, top + 1)])
    lowest, size = geometry.bounds(index)
    found = geometry.equivalents(index)
    expected = (lowest, lowest + size - 1, lowest + (size >> 1))
    assert [part.tolist() for part in found] == [part.tolist() for part in expected]
    assert (found[0] is index) == (top < 2**18)  # the shortcut taken only where it is exact
