"""The drain's watchdog and the verdicts every result carries, on plain numbers."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.engine.outcome import CatchUpOutcome, CatchUpPlan, DrainVerdict, RunOutcome
from loadgen.engine.stats import IntervalStats
from loadgen.formats.run_verdicts import (
    consumers_verdict,
    drain_failed,
    rate_verdict,
    verdict_fields,
)
from loadgen.running import thresholds
from loadgen.running.request import RunOptions
from loadgen.running.scenarios.catch_up import (
    DrainSample,
    DrainWatch,
    backlog_drain_timeout_s,
    stall_window_s,
)
from loadgen.spec import Workload
from loadgen.spec.durations import parse_wait


def interval(start_s: float, sent: int, received: int, *, warmup: bool = False) -> IntervalStats:
    start_ms = int(start_s * 1000)
    return IntervalStats(
        start_ms=start_ms,
        end_ms=start_ms + 1000,
        sent=sent,
        received=received,
        warmup=warmup,
    )


def test_the_stall_window_is_three_intervals_and_at_least_five_seconds():
    assert stall_window_s(10) == 30 and stall_window_s(2) == 6 and stall_window_s(1) == 5


def test_a_backlog_no_lower_than_a_window_ago_has_stalled():
    watch = DrainWatch(window_s=5)
    backlogs = [5000, 4000, 4500, 5200, 5100, 5000, 5000]  # resumed, then fell back to 5000
    stalled = [
        watch.observe(DrainSample(at, 10_000 + at, 5000 + at - b)) for at, b in enumerate(backlogs)
    ]
    assert stalled == [False] * 5 + [True, True]  # 5 s after the first sample, as high as it


def test_a_backlog_that_shrinks_however_slowly_is_left_to_the_timeout():
    watch = DrainWatch(window_s=5)
    assert not any(
        watch.observe(DrainSample(at, fed=10_000 + 2000 * at, read=2000 * at + at))
        for at in range(20)
    )


def test_the_watch_reports_the_rates_over_its_window():
    watch = DrainWatch(window_s=5)
    for at in range(12):
        watch.observe(DrainSample(at, fed=2000 * at, read=900 * at))
    read, fed = watch.rates()
    assert read == pytest.approx(900) and fed == pytest.approx(2000)
    assert watch.samples[0].at == 6  # only the window is kept


def drain(completed: bool, reason: str) -> DrainVerdict:
    return DrainVerdict(completed, reason, 2000, 7700, 910.0, 2000.0, 5.0, 600.0)


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("stalled", "consumers at 910 msg/s cannot drain a backlog growing at 1,090 msg/s"),
        ("timeout", "did not drain within the 600-s timeout"),
    ],
)
def test_a_drain_verdict_names_the_rates(reason, says):
    assert says in drain(False, reason).describe(subscriptions=1)


def test_a_rate_is_held_within_one_percent_or_a_message_per_producer():
    measured = [interval(0, 990, 0), interval(1, 990, 0)]
    assert rate_verdict(1000, measured, producers=1)["held"] is True  # 99 %
    short = [interval(0, 980, 0), interval(1, 980, 0)]
    assert rate_verdict(1000, short, producers=1)["held"] is False  # 98 %
    few = [interval(0, 7, 0)]  # 10 msg/s asked: 3 messages short is within a message per
    assert rate_verdict(10, few, producers=2)["held"] is True  # producer and one more


def test_a_rate_without_a_fixed_ask_or_producers_is_not_judged():
    assert rate_verdict(None, [interval(0, 1, 0)], producers=1)["held"] is None
    assert rate_verdict(10, [interval(0, 0, 0)], producers=0)["held"] is None


def outcome_of(intervals, backlog_at_stop=None) -> RunOutcome:
    return RunOutcome(intervals=intervals, backlog_at_stop=backlog_at_stop)


def test_consumers_kept_up_when_the_backlog_is_flat_from_the_warm_up_on():
    steady = [interval(0, 1000, 900, warmup=True)] + [interval(t, 1000, 1000) for t in range(1, 6)]
    verdict = consumers_verdict(outcome_of(steady, 100), 1, 1, delivered_rate=1000)
    assert verdict["keptUp"] is True and verdict["growth"] == 0
    assert verdict["backlogAtStart"] == 100 and verdict["seconds"] == 5


def test_consumers_fall_behind_when_the_backlog_grows_past_a_tenth_of_a_second():
    behind = [interval(0, 1000, 1000, warmup=True)] + [interval(t, 1000, 950) for t in range(1, 6)]
    verdict = consumers_verdict(outcome_of(behind, 250), 1, 1, delivered_rate=1000)
    assert verdict["keptUp"] is False and verdict["growth"] == 250 and verdict["allowance"] == 100
    assert verdict["trend"] == pytest.approx(50)


def test_the_backlog_when_producers_stopped_stands_for_the_last_intervals_drained_one():
    """The last interval folds in the end's drain (its backlog is ~0): the verdict is judged
    on the backlog when the producers stopped."""
    intervals = [interval(0, 1000, 1000, warmup=True), interval(1, 1000, 500), interval(2, 0, 1500)]
    assert consumers_verdict(outcome_of(intervals, None), 1, 1, 1000)["growth"] == 0
    assert consumers_verdict(outcome_of(intervals, 1000), 1, 1, 1000)["growth"] == 1000


def test_a_single_interval_without_warm_up_is_too_short_for_a_trend():
    verdict = consumers_verdict(outcome_of([interval(0, 10, 10)], 0), 1, 1, 10)
    assert verdict["keptUp"] is None and "too few intervals" in verdict["reason"]


def test_a_catch_up_run_is_judged_from_the_drains_end_and_fails_when_it_did_not_come():
    plan = CatchUpPlan(2 * 1024 * 1024, 1024, 0.9, 1)
    undrained = CatchUpOutcome(plan, drain_ended_ms=3000, drained=False, drain=drain(False, "x"))
    outcome = RunOutcome(intervals=[interval(0, 10, 0)], catch_up=undrained)
    fields = verdict_fields(outcome, outcome.intervals, {"producerRate": 10}, 1, 1)
    assert fields["consumers"]["keptUp"] is False and fields["drain"]["completed"] is False
    assert fields["passed"] is False and drain_failed({"verdicts": fields})
    drained = CatchUpOutcome(plan, drain_ended_ms=2000, drained=True, drain=drain(True, "drained"))
    steady = [interval(t, 1000, 1000) for t in range(5)]  # ends at 1, 2 (phase), 3, 4, 5 s
    judged = consumers_verdict(RunOutcome(intervals=steady, catch_up=drained), 1, 1, 1000)
    assert judged["seconds"] == 3  # from the drain's end at 2 s to 5 s


def test_verdicts_are_thresholds_and_a_verdict_not_judged_fails_one():
    figures = thresholds.Figures(
        {},
        thresholds.verdict_counts(
            {"rate": {"held": True}, "consumers": {"keptUp": False, "growth": 250, "trend": 5}}
        ),
    )
    texts = ("rate.held", "consumers.keptUp", "drain.completed", "backlog.growth<1000")
    checks = thresholds.judge(thresholds.parse_all(texts), figures)
    assert [check.passed for check in checks] == [True, False, False, True]
    assert checks[1].describe() == "consumers.keptUp: no"
    assert checks[2].describe() == "drain.completed: not judged"


@pytest.mark.parametrize("bad", ["rate.held==1", "backlog.growth<1ms", "backlog<5", "drain"])
def test_a_bad_verdict_expression_is_refused_naming_the_grammar(bad):
    with pytest.raises(ConfigError, match=r"VERDICT: rate\.held, consumers\.keptUp"):
        thresholds.parse(bad)


def test_a_wait_is_a_positive_duration_or_forever():
    assert parse_wait("forever", option="x") == 0 and parse_wait("90s", option="x") == 90
    with pytest.raises(ConfigError, match="or forever"):
        parse_wait("0", option="--backlog-drain-timeout")
    with pytest.raises(ConfigError, match=r"'soon' is not a duration.*or forever"):
        parse_wait("soon", option="--backlog-drain-timeout")


def test_the_drain_timeout_is_the_flags_else_the_workloads_else_the_catch_up_timeout():
    fields = {"topics": 1, "partitionsPerTopic": 1, "messageSize": 1, "testDurationMinutes": 1}
    plain, timed = Workload(**fields), Workload(**fields, backlogDrainTimeout="5m")
    forever = Workload(**fields, backlogDrainTimeout="forever")
    assert backlog_drain_timeout_s(RunOptions(catch_up_timeout_s=60), plain) == 60
    assert backlog_drain_timeout_s(RunOptions(catch_up_timeout_s=60), timed) == 300
    assert backlog_drain_timeout_s(RunOptions(backlog_drain_timeout_s=2), timed) == 2
    assert backlog_drain_timeout_s(RunOptions(), forever) == 0
