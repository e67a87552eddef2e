"""A fault's figures from a run's intervals: windows, outage, recovery and what was lost."""

import json

import numpy as np
import pytest

from loadgen.base import hdr
from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats
from loadgen.formats.fault_windows import fault_figures, recovered

T0 = 1_700_000_000_000
RATE = 1000.0


def at(second: float) -> int:
    """Epoch ms ``second`` seconds into the run."""
    return T0 + round(second * 1000)


def tick(
    second: int,
    *,
    sent: int = 1000,
    publish_ms: float | None = 2.0,
    e2e_ms: float = 5.0,
    warmup: bool = False,
    **counts: int,
) -> IntervalStats:
    """One 1 s interval; its publish latencies all ``publish_ms`` (none when nothing was sent)."""
    ns = lambda ms, n: np.full(n, round(ms * 1_000_000), dtype=np.int64)  # noqa: E731
    histograms = {}
    if sent and publish_ms is not None:
        histograms[PUBLISH] = hdr.record_ns(PUBLISH, ns(publish_ms, 100))
        histograms[END_TO_END] = hdr.record_ns(END_TO_END, ns(e2e_ms, 100))
    return IntervalStats(
        start_ms=at(second),
        end_ms=at(second + 1),
        sent=sent,
        received=counts.pop("received", sent),
        warmup=warmup,
        histograms=histograms,
        **counts,
    )


def steady(seconds: range, **kwargs) -> list[IntervalStats]:
    return [tick(s, **kwargs) for s in seconds]


def restart_run() -> list[IntervalStats]:
    """10 s: steady at 2 ms, no acknowledgement in seconds 3-5, a slow second 6, then steady."""
    return [
        *steady(range(3)),
        *steady(range(3, 6), sent=0),
        tick(6, publish_ms=6.0),
        *steady(range(7, 10), publish_ms=3.0),
    ]


def test_clean_fault_reports_its_outage_and_recovery():
    figures = fault_figures(restart_run(), at(3), at(4.5), RATE)
    windows = figures["windows"]
    assert [windows[w]["intervals"] for w in ("before", "during", "after")] == [3, 2, 5]
    before = windows["before"]
    assert before["seconds"] == 3.0
    assert before["publishRate"] == 1000.0
    assert before["consumeRate"] == 1000.0
    assert before["publishLatency"]["99pct"] == pytest.approx(2.0, rel=1e-3)
    assert before["endToEndLatency"]["50pct"] == pytest.approx(5.0, rel=1e-3)
    assert set(before["publishLatency"]) == {"50pct", "99pct", "Max"}
    assert windows["during"]["publishRate"] == 0.0
    assert windows["during"]["publishLatency"] is None
    assert windows["after"]["publishRate"] == pytest.approx(4000 / 5)
    # the outage runs on past the end of the restart, into the after window
    assert figures["unavailableSeconds"] == 3.0
    # second 6 is too slow (6 ms > 2x 2 ms); second 7 (3 ms) recovered by its end at 8 s
    assert figures["recoverySeconds"] == pytest.approx(3.5)
    assert figures["recoveryReason"] is None
    assert recovered(figures) is True


def test_figures_are_json_ready():
    figures = fault_figures(restart_run(), at(3), at(4.5), RATE, lost_per_interval=[0] * 10)
    assert json.loads(json.dumps(figures)) == figures


def test_first_interval_after_can_be_the_recovery():
    figures = fault_figures(steady(range(10)), at(3), at(5), RATE)
    assert figures["unavailableSeconds"] == 0.0
    assert figures["recoverySeconds"] == 1.0
    assert recovered(figures) is True


def test_unavailable_is_the_longest_stretch_not_the_sum():
    intervals = [
        *steady(range(3)),
        tick(3, sent=0),
        tick(4),
        *steady(range(5, 7), sent=0),
        *steady(range(7, 10)),
    ]
    assert fault_figures(intervals, at(3), at(4), RATE)["unavailableSeconds"] == 2.0


def test_an_outage_before_the_fault_is_not_counted():
    intervals = [*steady(range(2)), *steady(range(2, 4), sent=0), *steady(range(4, 10))]
    assert fault_figures(intervals, at(5), at(6), RATE)["unavailableSeconds"] == 0.0


def test_no_recovery_when_publish_p99_stays_high():
    intervals = [*steady(range(3)), *steady(range(3, 10), publish_ms=4.5)]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["recoverySeconds"] is None
    assert figures["recoveryReason"] == (
        "publish p99 stayed above 2x (or 1 ms above) the before window's 2 ms"
    )
    assert recovered(figures) is False


def test_no_recovery_when_the_asked_rate_is_not_held():
    intervals = [*steady(range(3)), *steady(range(3, 10), sent=900)]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["recoverySeconds"] is None
    assert figures["recoveryReason"] == "publish rate stayed below 99% of the asked 1000 msg/s"
    assert recovered(figures) is False


def test_rate_is_held_at_99_percent_of_the_asked_rate():
    short = [*steady(range(3)), tick(3, sent=0), tick(4, sent=989), tick(5, sent=990)]
    figures = fault_figures(short, at(3), at(4), RATE)
    assert figures["recoverySeconds"] == 2.0


def test_without_an_asked_rate_the_before_windows_mean_rate_is_the_target():
    intervals = [
        *steady(range(3), sent=500),
        tick(3, sent=0),
        tick(4, sent=490),
        tick(5, sent=495),
    ]
    figures = fault_figures(intervals, at(3), at(4), None)
    assert figures["recoverySeconds"] == 2.0
    stuck = fault_figures(intervals[:5], at(3), at(4), None)
    assert stuck["recoveryReason"] == (
        "publish rate stayed below 99% of the before window's 500 msg/s"
    )


def test_messages_withdrawn_on_purpose_count_toward_the_rate():
    intervals = [*steady(range(3)), tick(3, sent=0), tick(4, sent=900, withdrawn=100)]
    assert fault_figures(intervals, at(3), at(4), RATE)["recoverySeconds"] == 1.0


def test_recovery_needs_latency_and_rate_in_the_same_interval():
    intervals = [
        *steady(range(3)),
        tick(3, sent=0),
        tick(4, publish_ms=9.0),
        tick(5, sent=500),
    ]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["recoveryReason"] == (
        "no interval had both publish p99 within 2x (or 1 ms above) the before window's 2 ms"
        " and the publish rate at 99% of the asked 1000 msg/s"
    )


def test_neither_latency_nor_rate_came_back():
    intervals = [*steady(range(3)), tick(3, sent=0), tick(4, sent=500, publish_ms=9.0)]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["recoveryReason"] == (
        "publish p99 stayed above 2x (or 1 ms above) the before window's 2 ms"
        " and the publish rate below 99% of the asked 1000 msg/s"
    )


def test_nothing_acknowledged_after_the_fault():
    intervals = [*steady(range(3)), *steady(range(3, 6), sent=0)]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["recoveryReason"] == "no publish was acknowledged after the fault"
    assert figures["unavailableSeconds"] == 3.0
    assert recovered(figures) is False


def test_fault_at_the_end_of_the_run_cannot_be_judged():
    figures = fault_figures(steady(range(5)), at(4), at(5.5), RATE)
    assert figures["windows"]["after"] == {"seconds": 0, "intervals": 0}
    assert figures["windows"]["during"]["intervals"] == 1
    assert figures["recoverySeconds"] is None
    assert figures["recoveryReason"] == "no interval after the fault"
    assert recovered(figures) is None


def test_empty_before_window_cannot_be_judged():
    figures = fault_figures(steady(range(5)), at(0), at(1), RATE)
    assert figures["windows"]["before"] == {"seconds": 0, "intervals": 0}
    assert figures["recoverySeconds"] is None
    assert figures["recoveryReason"] == "no measured interval before the fault"
    assert recovered(figures) is None


def test_before_window_without_acknowledgements_cannot_be_judged():
    intervals = [*steady(range(3), sent=0), *steady(range(3, 6))]
    figures = fault_figures(intervals, at(3), at(4), RATE)
    assert figures["windows"]["before"]["publishLatency"] is None
    assert figures["recoveryReason"] == "no publish was acknowledged before the fault"
    assert recovered(figures) is None


def test_no_measured_interval_at_all():
    figures = fault_figures([], at(3), at(4), RATE, lost_per_interval=[])
    empty = {"seconds": 0, "intervals": 0}
    assert figures["windows"] == {"before": empty, "during": empty, "after": empty}
    assert figures["unavailableSeconds"] == 0.0
    assert figures["lost"] == 0
    assert recovered(figures) is None


def test_interval_straddling_the_start_or_end_belongs_to_during():
    figures = fault_figures(steady(range(10)), at(2.5), at(5.5), RATE)
    windows = figures["windows"]
    assert [windows[w]["intervals"] for w in ("before", "during", "after")] == [2, 4, 4]
    assert windows["during"]["seconds"] == 4.0
    # the first after interval, 6-7 s, shows recovery 1.5 s after the fault ended
    assert figures["recoverySeconds"] == 1.5


def test_fault_on_interval_boundaries_takes_whole_intervals():
    figures = fault_figures(steady(range(10)), at(3), at(5), RATE)
    windows = figures["windows"]
    assert [windows[w]["intervals"] for w in ("before", "during", "after")] == [3, 2, 5]


def test_fault_without_duration_takes_the_interval_it_fell_in():
    figures = fault_figures(steady(range(10)), at(3.4), at(3.4), RATE)
    windows = figures["windows"]
    assert [windows[w]["intervals"] for w in ("before", "during", "after")] == [3, 1, 6]
    assert figures["recoverySeconds"] == pytest.approx(1.6)


def test_fault_that_ended_before_it_started_is_refused():
    with pytest.raises(ValueError, match="before it started"):
        fault_figures(steady(range(3)), at(2), at(1), RATE)


def test_lost_messages_are_attributed_to_the_windows_they_were_acknowledged_in():
    lost = [0, 0, 1, 7, 5, 0, 2, 0, 0, 0]
    figures = fault_figures(restart_run(), at(3), at(4.5), RATE, lost_per_interval=lost)
    windows = figures["windows"]
    assert [windows[w]["lost"] for w in ("before", "during", "after")] == [1, 12, 2]
    # the fault's own: during and after, and the last interval before it (second 2: the 1
    # acknowledged just before the broker failed)
    assert figures["lost"] == 15
    earlier = fault_figures(restart_run(), at(3), at(4.5), RATE, lost_per_interval=[1, *[0] * 9])
    assert earlier["lost"] == 0 and earlier["windows"]["before"]["lost"] == 1  # second 0: not


def test_lost_is_null_when_the_run_could_not_account():
    figures = fault_figures(restart_run(), at(3), at(4.5), RATE)
    assert figures["lost"] is None
    assert all(figures["windows"][w]["lost"] is None for w in ("before", "during", "after"))


def test_lost_per_interval_must_match_the_measured_intervals():
    with pytest.raises(ValueError, match="2 counts for 10 measured intervals"):
        fault_figures(restart_run(), at(3), at(4.5), RATE, lost_per_interval=[0, 0])


def test_warmup_intervals_are_ignored_and_lost_counts_follow_the_measured_ones():
    warm = [tick(s, warmup=True, publish_ms=50.0, duplicates=9) for s in range(-3, 0)]
    lost = [1, 0, 0, 0, 4, 0, 0, 0, 0, 0]
    figures = fault_figures([*warm, *restart_run()], at(3), at(4.5), RATE, lost_per_interval=lost)
    before = figures["windows"]["before"]
    assert before["intervals"] == 3
    assert before["publishLatency"]["Max"] == pytest.approx(2.0, rel=1e-3)
    assert before["duplicated"] == 0
    assert before["lost"] == 1
    assert figures["lost"] == 4
    assert figures["recoverySeconds"] == pytest.approx(3.5)


def test_duplicates_and_out_of_order_per_window_and_over_the_fault():
    intervals = [
        tick(0, duplicates=1),
        tick(1, duplicates=2, out_of_order=3),
        tick(2, duplicates=4),
        tick(3, out_of_order=5),
        tick(4, duplicates=8, out_of_order=1),
    ]
    figures = fault_figures(intervals, at(1), at(2), RATE)
    windows = figures["windows"]
    assert [windows[w]["duplicated"] for w in ("before", "during", "after")] == [1, 2, 12]
    assert [windows[w]["outOfOrder"] for w in ("before", "during", "after")] == [0, 3, 6]
    assert figures["duplicated"] == 14
    assert figures["outOfOrder"] == 9


def test_errors_and_consume_rate_per_window():
    intervals = [tick(0), tick(1, sent=200, send_errors=800, received=50), tick(2, received=3000)]
    windows = fault_figures(intervals, at(1), at(2), RATE)["windows"]
    assert [windows[w]["errors"] for w in ("before", "during", "after")] == [0, 800, 0]
    assert windows["during"]["publishRate"] == 200.0
    assert windows["during"]["consumeRate"] == 50.0
    assert windows["after"]["consumeRate"] == 3000.0


def test_window_latencies_are_java_equal_percentiles_of_the_merged_intervals():
    values = np.arange(1, 101, dtype=np.int64) * 1_000_000  # 1..100 ms
    intervals = [
        IntervalStats(
            at(s),
            at(s + 1),
            sent=50,
            histograms={PUBLISH: hdr.record_ns(PUBLISH, values[s * 50 : (s + 1) * 50])},
        )
        for s in range(2)
    ]
    whole = hdr.summary(hdr.record_ns(PUBLISH, values))
    latency = fault_figures([*intervals, tick(2)], at(2), at(3), RATE)["windows"]["before"]
    assert latency["publishLatency"] == {
        "50pct": whole.p50 / 1000,
        "99pct": whole.p99 / 1000,
        "Max": whole.max / 1000,
    }
    assert latency["endToEndLatency"] is None


def test_since_and_until_bound_the_windows_between_faults():
    intervals = [
        *steady(range(2), publish_ms=20.0),  # slow: during an earlier fault
        *steady(range(2, 5)),
        *steady(range(5, 7), sent=0),  # this fault
        *steady(range(7, 10)),
        *steady(range(10, 14), sent=0),  # the next fault's longer outage
    ]
    figures = fault_figures(intervals, at(5), at(6), RATE, since_ms=at(1.5), until_ms=at(10))
    windows = figures["windows"]
    assert [windows[w]["intervals"] for w in ("before", "during", "after")] == [3, 1, 4]
    assert windows["before"]["publishLatency"]["Max"] == pytest.approx(2.0, rel=1e-3)
    assert figures["unavailableSeconds"] == 2.0
    assert figures["recoverySeconds"] == 2.0
    unbounded = fault_figures(intervals, at(5), at(6), RATE)
    assert unbounded["windows"]["before"]["intervals"] == 5
    assert unbounded["unavailableSeconds"] == 4.0


def test_a_sub_millisecond_broker_recovers_within_a_millisecond_of_its_p99():
    """Twice a p99 of a few µs is noise: 1 ms above it is back to normal too."""
    run = [*steady(range(3), publish_ms=0.004), *steady(range(3, 6), publish_ms=0.9)]
    figures = fault_figures(run, at(3), at(3), RATE)
    assert figures["recoverySeconds"] == 1.0 and recovered(figures)
    slow = [*steady(range(3), publish_ms=0.004), *steady(range(3, 6), publish_ms=1.2)]
    assert fault_figures(slow, at(3), at(3), RATE)["recoverySeconds"] is None
