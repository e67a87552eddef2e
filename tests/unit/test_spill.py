"""loadgen.engine.spill: kept intervals read back exactly, hold no histograms, survive a full
disk."""

import gc
import resource
import signal
import threading
import tracemalloc

import numpy as np
import pytest

from loadgen.base import hdr
from loadgen.engine.spill import PackedHistograms, Spill, SpilledHistograms
from loadgen.engine.stats import END_TO_END, METRICS, PUBLISH, IntervalStats


def measured(seed: int, n: int = 20_000) -> IntervalStats:
    """An interval as a worker hands it over: every metric recorded, arrays in memory."""
    rng = np.random.default_rng(seed)
    histograms = {
        metric: hdr.record_ns(metric, rng.lognormal(14, 1.0, n).astype(np.int64))
        for metric in METRICS
    }
    return IntervalStats(seed * 1000, seed * 1000 + 1000, sent=n, received=n, histograms=histograms)


def same_counts(kept: IntervalStats, original: IntervalStats) -> bool:
    return sorted(kept.histograms) == sorted(original.histograms) and all(
        np.array_equal(kept.histograms[m].index, original.histograms[m].index)
        and np.array_equal(kept.histograms[m].counts, original.histograms[m].counts)
        for m in original.histograms
    )


def test_a_kept_interval_reads_back_every_count_and_its_counters():
    spill = Spill()
    originals = [measured(seed) for seed in range(3)]
    kept = [spill.keep(stats) for stats in originals]
    for again, original in zip(kept, originals, strict=True):
        assert isinstance(again.histograms, SpilledHistograms)
        assert same_counts(again, original)
        assert (again.start_ms, again.sent, again.received) == (
            original.start_ms,
            original.sent,
            original.received,
        )
    assert spill.keep(kept[0]) is kept[0]  # keeping twice spills nothing twice


def test_kept_intervals_cost_memory_for_their_counters_only():
    spill = Spill()
    stats = measured(1)
    packed_size = sum(len(hdr.pack(h)) for h in stats.histograms.values())
    assert packed_size > 15_000  # what each interval would hold if it were kept in memory
    spill.keep(stats)  # the first one pays for imports and buffers
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [spill.keep(stats) for _ in range(100)]
        gc.collect()
        grown = sum(d.size_diff for d in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert len(kept) == 100
    assert grown < 100 * 4_000 < 100 * packed_size


def test_intervals_outlive_the_spill_that_wrote_them():
    original = measured(2)
    kept = Spill().keep(original)  # the result handed to a caller is all that refers to it
    gc.collect()
    assert same_counts(kept, original)


def test_threads_keeping_and_reading_at_once_get_their_own_bytes():
    spill = Spill()
    originals = [measured(seed, n=2_000) for seed in range(8)]
    kept: dict[int, IntervalStats] = {}

    def keep(seed: int) -> None:
        for _ in range(5):
            kept[seed] = spill.keep(originals[seed])
            assert same_counts(kept[seed], originals[seed])

    threads = [threading.Thread(target=keep, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(same_counts(kept[seed], originals[seed]) for seed in range(8))


def test_a_directory_that_cannot_take_the_file_keeps_intervals_in_memory(tmp_path, caplog):
    spill = Spill(str(tmp_path / "absent"))
    original = measured(3)
    kept = spill.keep(original)
    assert isinstance(kept.histograms, PackedHistograms)
    assert same_counts(kept, original)
    assert "cannot keep interval histograms on disk" in caplog.text
    assert str(tmp_path / "absent") in caplog.text


def test_a_disk_that_fills_mid_run_loses_no_interval(tmp_path, caplog):
    spill = Spill(str(tmp_path))
    first = spill.keep(measured(4))
    assert isinstance(first.histograms, SpilledHistograms)
    originals = [measured(seed) for seed in (5, 6)]
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit: EFBIG, no signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (1, limits[1]))  # no file can grow: keep only
    try:
        kept = [spill.keep(stats) for stats in originals]
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, previous)
    assert all(isinstance(k.histograms, PackedHistograms) for k in kept)
    assert all(same_counts(k, o) for k, o in zip(kept, originals, strict=True))
    assert same_counts(first, measured(4))  # what was spilled before is still readable
    assert caplog.text.count("cannot keep interval histograms on disk") == 1


@pytest.mark.parametrize("metric", [PUBLISH, END_TO_END])
def test_merging_kept_intervals_equals_merging_the_originals(metric):
    spill = Spill()
    originals = [measured(seed, n=5_000) for seed in range(4)]
    kept = [spill.keep(stats) for stats in originals]
    merged = hdr.merge(metric, (k.histograms[metric] for k in kept))
    expected = hdr.merge(metric, (o.histograms[metric] for o in originals))
    assert np.array_equal(merged.index, expected.index)
    assert np.array_equal(merged.counts, expected.counts)
