"""The four-timestamp clock offset estimate and the end-to-end skew bound built on it."""

import pytest

from loadgen.cluster.clock import ClockOffset, best_offset, e2e_skew_bound_ns


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


def test_the_skew_bound_takes_the_worst_pair_sharing_a_topic():
    offsets = {
        "p": ClockOffset(1_000_000, 200_000),
        "c1": ClockOffset(1_500_000, 100_000),
        "c2": ClockOffset(-2_000_000, 400_000),
    }
    # |(-2 ms) - 1 ms| + 0.2 ms + 0.4 ms
    assert e2e_skew_bound_ns(offsets, [("p", "c1"), ("p", "c2")]) == 3_300_000
    assert e2e_skew_bound_ns(offsets, [("p", "c1")]) == 650_000
    assert e2e_skew_bound_ns(offsets, [("p", "p")]) == 0
