"""The four-timestamp clock offset estimate and the end-to-end skew bound built on it."""

import pytest

from loadgen.distributed.clock import (
    ClockOffset,
    PairShift,
    best_offset,
    e2e_skew_bound_ns,
    pair_shifts,
)


def exchange(offset, out_ns, back_ns, work_ns=10, t0=1_000_000):
    """A request that takes ``out_ns`` there and ``back_ns`` back to a clock ``offset`` ahead."""
    t1 = t0 + out_ns + offset
    t2 = t1 + work_ns
    return (t0, t1, t2, t2 - offset + back_ns)


def test_a_symmetric_path_gives_the_exact_offset():
    estimate = best_offset([exchange(5_000_000, 200, 200)])
    assert estimate == ClockOffset(5_000_000, 400)


def test_the_shortest_round_trip_wins_and_bounds_the_error():
    samples = [exchange(-3_000, 50_000, 10_000), exchange(-3_000, 300, 100)]
    estimate = best_offset(samples)
    assert estimate.round_trip_ns == 400
    assert abs(estimate.offset_ns - -3_000) <= estimate.bound_ns


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        best_offset([])


OFFSETS = {
    "p": ClockOffset(1_000_000, 200_000),
    "c1": ClockOffset(1_500_000, 100_000),
    "c2": ClockOffset(-2_000_000, 400_000),
}


def test_the_skew_bound_takes_the_worst_pair_sharing_a_topic():
    def bound(pairs):
        return e2e_skew_bound_ns(pair_shifts(OFFSETS, pairs), corrected=False)

    # |(-2 ms) - 1 ms| + 0.1 ms + 0.2 ms
    assert bound([("p", "c1"), ("p", "c2")]) == 3_300_000
    assert bound([("p", "c1")]) == 650_000
    assert bound([("p", "p")]) == 0


def test_a_pair_shifts_latency_by_the_consumer_offset_minus_the_producer_offset():
    assert pair_shifts(OFFSETS, [("p", "c2"), ("c1", "c1")]) == [
        PairShift("p", "c2", -3_000_000, 300_000)
    ]


def test_once_corrected_only_the_bounds_of_the_offsets_remain():
    shifts = pair_shifts(OFFSETS, [("p", "c1"), ("p", "c2")])
    assert e2e_skew_bound_ns(shifts, corrected=True) == 300_000  # 0.1 ms + 0.2 ms (p, c2)
    assert e2e_skew_bound_ns([], corrected=True) == 0
