"""loadgen.base.hdr: bit-identical binning, V2 round trips, Java-equal percentiles (checked in
Java)."""

import gc
import tracemalloc

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from loadgen.base import hdr


def lognormal_ns(n=50_000, seed=7):
    rng = np.random.default_rng(seed)
    values = rng.lognormal(7.5, 1.2, n).astype(np.int64) * 1000  # µs scale, as ns
    outliers = rng.integers(100_000, 30_000_000, n // 1000) * 1000
    return np.concatenate([values, outliers])


EDGE_US = [
    0,
    1,
    2,
    255,
    256,
    131_071,
    131_072,
    131_073,
    262_143,
    262_144,
    262_145,
    2**20,
    2**20 - 1,
    59_999_999,
    60_000_000,
    60_000_001,
    10**12,
]


def test_numpy_binning_is_bit_identical_to_record_value():
    values_ns = np.concatenate([lognormal_ns(), np.array(EDGE_US, dtype=np.int64) * 1000 + 999])
    reference = HdrHistogram(1, 60_000_000, 5)
    for micros in (values_ns // 1000).tolist():
        reference.record_value(min(micros, 60_000_000))  # OMB clamps publish latency to 60 s
    ours = hdr.record_ns("publish", values_ns)
    dense = np.ctypeslib.as_array(reference.counts)
    assert np.array_equal(np.flatnonzero(dense), ours.index)
    assert np.array_equal(dense[ours.index], ours.counts)
    assert hdr.encode(ours) == reference.encode().decode()


def test_small_intervals_binned_by_sorting_equal_large_ones_binned_by_bincount():
    values = lognormal_ns(n=200_000)  # over 1/8 of publish's counts array: bincount
    assert len(values) * hdr.SPARSE_BELOW > hdr.layout("publish").counts_len
    whole = hdr.record_ns("publish", values)
    parts = hdr.merge("publish", [hdr.record_ns("publish", c) for c in np.array_split(values, 20)])
    assert np.array_equal(whole.index, parts.index) and np.array_equal(whole.counts, parts.counts)


def test_negative_values_are_refused_not_recorded():
    with pytest.raises(ValueError, match="negative"):
        hdr.record_ns("endToEnd", [5_000, -1_000])


def test_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="unknown metric"):
        hdr.histogram_for("latency")


def test_merge_equals_recording_everything_in_one_histogram():
    values = lognormal_ns()
    parts = [hdr.record_ns("endToEnd", chunk) for chunk in np.array_split(values, 7)]
    merged = hdr.merge("endToEnd", parts)
    whole = hdr.record_ns("endToEnd", values)
    assert np.array_equal(merged.index, whole.index) and np.array_equal(merged.counts, whole.counts)


def test_merging_more_histograms_than_a_batch_equals_recording_them_at_once():
    values = lognormal_ns(n=20_000)
    chunks = np.array_split(values, hdr.MERGE_BATCH * 2 + 3)
    merged = hdr.merge("publish", (hdr.record_ns("publish", chunk) for chunk in chunks))
    whole = hdr.record_ns("publish", values)
    assert np.array_equal(merged.index, whole.index) and np.array_equal(merged.counts, whole.counts)


@pytest.mark.parametrize(
    "original",
    [
        hdr.record_ns("endToEnd", lognormal_ns()),
        hdr.histogram_for("publish"),
        hdr.Histogram("endToEnd", np.array([0, 7, hdr.layout("endToEnd").counts_len - 1]),
                      np.array([1, 2**40, 3])),
    ],
    ids=["lognormal", "empty", "extremes"],
)  # fmt: skip
def test_pack_unpack_round_trip_keeps_every_count(original):
    again = hdr.unpack(original.metric, hdr.pack(original))
    assert np.array_equal(again.index, original.index) and again.index.dtype == np.int64
    assert np.array_equal(again.counts, original.counts) and again.counts.dtype == np.int64


def test_a_packed_interval_is_over_ten_times_smaller_than_its_arrays():
    interval = hdr.record_ns("publish", lognormal_ns(n=20_000))
    assert len(hdr.pack(interval)) * 10 < interval.index.nbytes + interval.counts.nbytes


def test_encode_decode_round_trip_keeps_every_count():
    original = hdr.record_ns("endToEnd", lognormal_ns())
    again = hdr.decode("endToEnd", hdr.encode(original))
    assert np.array_equal(again.index, original.index)
    assert np.array_equal(again.counts, original.counts)


@pytest.mark.parametrize("metric", ["publish", "endToEnd"])
def test_encode_writes_the_bytes_hdrh_writes_for_the_same_values(metric):
    """Our encoder's counts array ends at the largest value, hdrh's spans the whole range: the
    bytes must not differ (nothing, one value, the top of the range, a wide spread)."""
    highest = hdr.layout(metric).highest
    spread = np.random.default_rng(3).lognormal(8, 2, 5_000).astype(np.int64).clip(0, highest)
    for micros in ([], [1], [highest], spread):
        reference = HdrHistogram(1, highest, hdr.SIGNIFICANT_DIGITS)
        for value in micros:
            reference.record_value(int(value))
        ours = hdr.encode(hdr.record_ns(metric, np.asarray(micros, dtype=np.int64) * 1000))
        assert ours == reference.encode().decode("ascii")


def test_empty_histogram_reads_as_zero():
    empty = hdr.histogram_for("publish")
    assert hdr.value_at_percentile(empty, 99) == 0
    assert hdr.mean(empty) == 0.0
    assert hdr.quantile_map(empty) == {}
    assert hdr.summary(empty).max == 0


def test_percentile_rounds_up_like_java_where_hdrh_rounds_to_nearest():
    # two values: Java's p50 target is ceil(nextafter(50) / 100 × 2) = 1, the first value;
    # hdrh's round-to-nearest int(50 / 100 × 2 + 0.5) = 1 as well, but just above 50 Java moves on
    two = hdr.record_ns("publish", [1_000_000, 2_000_000])
    assert hdr.value_at_percentile(two, 50.0) == 1000
    assert hdr.value_at_percentile(two, 50.0001) == 2000


def test_percentiles_mean_and_quantile_map_equal_java_on_the_same_histograms(java_hdr):
    histograms = [
        hdr.record_ns("publish", lognormal_ns()),
        hdr.record_ns("publish", [2_500_000]),
        hdr.record_ns("publishDelay", np.arange(0, 3_000_000, 7)),
        hdr.record_ns("endToEnd", lognormal_ns(seed=3) * 40),
    ]
    java = java_hdr.reports(stdin="\n".join(hdr.encode(h) for h in histograms) + "\n")
    assert len(java) == len(histograms)
    for histogram, reference in zip(histograms, java, strict=True):
        java_hdr.assert_equal(histogram, reference)


def test_histogram_encoded_by_java_decodes_to_the_same_numbers(java_hdr):
    output = java_hdr.run("encode")
    blob, _, report = output.partition("\n")
    [java] = java_hdr.parse(report)
    java_hdr.assert_equal(hdr.decode("endToEnd", blob), java)


def test_decoding_a_histogram_of_another_range_is_refused():
    other = HdrHistogram(1, 3_600_000_000, 3)
    other.record_value(1000)
    with pytest.raises(ValueError, match="expected a histogram up to 60000000"):
        hdr.decode("publish", other.encode())


def test_decoding_leaves_nothing_for_the_garbage_collector():
    """Every interval of a long run is decoded again (journal, merges): what a decode allocates
    must be freed at once, never left to the cyclic collector the producer loop holds off."""
    text = hdr.encode(hdr.record_ns("endToEnd", lognormal_ns()))
    gc.disable()
    tracemalloc.start()
    try:
        for _ in range(20):
            hdr.decode("endToEnd", text)
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert current < 200_000  # bytes still held after 20 decodes


def test_encoding_intervals_of_every_size_leaves_nothing_for_the_garbage_collector():
    """Each interval's largest value sets the size of its encoding; a ctypes buffer type per
    size was garbage only the cyclic collector frees, which the producer loop's raised
    threshold holds off for the whole run: ~3 KB of RSS per new size, up to 12 KB an interval
    of the 1-s soak (bench/results/soak.md "Soak: what grew")."""
    intervals = [hdr.record_ns("endToEnd", [1_000, (1_000 + 37 * n) * 1_000]) for n in range(300)]
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        for interval in intervals:
            hdr.encode(interval)
        current, _ = tracemalloc.get_traced_memory()
        unreachable = gc.collect()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert unreachable == 0
    assert current < 30_000  # bytes still held after 300 encodes of 300 sizes


def test_preparing_the_layouts_leaves_no_template_for_the_loop_to_freeze():
    def templates_alive() -> int:
        return sum(isinstance(obj, HdrHistogram) for obj in gc.get_objects())

    hdr.layout.cache_clear()
    gc.collect()  # other tests' histograms, garbage in cycles too
    before = templates_alive()
    hdr.prepare_layouts()
    assert hdr.layout.cache_info().currsize == len(hdr.HIGHEST_TRACKABLE_US)
    assert templates_alive() == before
