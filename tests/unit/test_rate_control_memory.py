"""Rate discovery and rate profiles running on the in-process broker, and the rate change seam."""

import itertools
import time

import pytest

from harness.rates import judge_rate, skip_if_host_busy
from loadgen.driver_api import open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.plan import consumer_subscriptions
from loadgen.engine.rate import Schedule
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

MEMORY = DriverSpec(name="Memory", kind="memory")


def workload(**overrides):
    fields = {
        "name": "memory rates",
        "topics": 1,
        "partitionsPerTopic": 2,
        "messageSize": 100,
        "useRandomizedPayloads": True,
        "randomizedPayloadPoolSize": 4,
        "subscriptionsPerTopic": 2,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "testDurationMinutes": 1,
        "warmupDurationMinutes": 0,
    }
    return Workload.model_validate(fields | overrides)


def test_continued_schedule_starts_the_next_message_now_when_lag_is_forgotten():
    old = Schedule(start_ns=0, rate=1000)  # message 500 was due at 0.5 s
    new = old.continued(500, now_ns=2_000_000_000, rate=4000, keep_lag=False)
    assert new.intended_ns(500) == pytest.approx(2_000_000_000, abs=1)
    assert new.intended_ns(504) - new.intended_ns(500) == pytest.approx(1_000_000, abs=1)


def test_continued_schedule_keeps_the_lag_of_a_sender_that_is_behind():
    old = Schedule(start_ns=0, rate=1000)
    behind = old.continued(500, now_ns=2_000_000_000, rate=4000, keep_lag=True)
    assert behind.intended_ns(500) == pytest.approx(500_000_000, abs=1)
    ahead = old.continued(500, now_ns=100_000_000, rate=4000, keep_lag=True)
    assert ahead.intended_ns(500) == pytest.approx(100_000_000, abs=1)  # not in the future


def sent_over_a_second(worker):
    """Messages acknowledged per second over about a second, after 0.2 s for earlier sends to
    be acknowledged; divided by the time between the two snapshots, which a loaded machine
    stretches past the second slept (it did: 1285 "per second" at 1000 msg/s)."""
    time.sleep(0.2)
    started = time.monotonic()  # a snapshot takes what was recorded when it is called
    worker.snapshot(0, 0, warmup=False)
    time.sleep(1.0)
    ended = time.monotonic()
    return worker.snapshot(0, 0, warmup=False).sent / (ended - started)


def test_the_producer_loop_sends_at_the_adjusted_rate_from_the_next_burst():
    worker = LocalWorker(open_driver(MEMORY))
    try:
        topics = worker.create_topics(1, 1)
        worker.create_consumers(consumer_subscriptions(topics, 1, 1))
        worker.create_producers(topics)
        worker.start_load(1000, [bytes(10)], "NO_KEY")
        rates = [sent_over_a_second(worker)]
        for rate in (5000, 0.001):  # the last is clamped to 1 msg/s
            worker.adjust_rate(rate, keep_lag=False)
            rates.append(sent_over_a_second(worker))
    finally:
        worker.stop_load(1.0)
        worker.close(delete_topics=True)
    assert 900 <= rates[0] <= 1100
    assert 4500 <= rates[1] <= 5500
    assert rates[2] <= 3


def scheduled(history, start_ms, end_ms):
    """Messages the rate history asks for between two epoch-millisecond instants."""
    ends = [change["timeMs"] for change in history[1:]] + [end_ms]
    return sum(
        change["rate"] * max(0, min(end, end_ms) - max(change["timeMs"], start_ms)) / 1000
        for change, end in zip(history, ends, strict=True)
    )


def test_rate_discovery_ramps_up_while_the_broker_keeps_up_and_reports_its_history(tmp_path):
    report = run_one(
        RunRequest(
            workload(producerRate=0),
            MEMORY,
            # decisions at 0, 3 and 6 s; the extra second is for polls a loaded machine
            # delays (a run of 7 s ended before the third, pinned beside two CPU hogs)
            RunOptions(duration_s=8, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    discovery = report.result["rateDiscovery"]
    rates = [change["rate"] for change in discovery["history"]]
    reasons = [change["reason"] for change in discovery["history"]]
    if rates != [10_000, 20_000, 40_000]:  # a client held back by its host ramps down
        skip_if_host_busy(report.result, f"rate discovery's rates {rates}")
    assert rates == [10_000, 20_000, 40_000]
    assert reasons == ["initial", "ramp-up", "ramp-up"]
    assert discovery["finalRate"] == 40_000
    assert discovery["periodSeconds"] == 3
    # one decision per 3-s period, never early; a late one (polled every 0.25 s by a loop that
    # a loaded machine delays: 3409 ms measured) decides on the period as it was measured, so
    # the bound is that no period was skipped, not the machine's punctuality
    changes = [change["timeMs"] for change in discovery["history"]]
    assert all(2_990 <= b - a < 6_000 for a, b in itertools.pairwise(changes)), changes
    # the producer sends what the history says, timed by the product's own clocks: whole
    # intervals up to the last change, against the rate history over the same span (a single
    # second may fall behind on a loaded machine and catch up in the next: the schedule is
    # from the intended send times, so per-second rates time the machine's scheduling)
    intervals = [s for s in report.outcome.intervals if s.end_ms <= changes[-1]]
    assert len(intervals) >= 5
    sent = sum(s.sent for s in intervals)
    expected = sum(scheduled(discovery["history"], s.start_ms, s.end_ms) for s in intervals)
    judge_rate(report.result, sent, expected, rel=0.05)
    assert report.result["totalMessagesReceived"] == 2 * report.result["totalMessagesSent"]


def test_a_rate_profile_drives_the_measured_phase_and_warm_up_runs_at_its_first_rate(tmp_path):
    profile = [
        {"rate": "2k", "duration": 2},
        {"rampTo": "6k", "duration": 2},
        {"rate": 1000, "duration": 2},
    ]
    report = run_one(
        RunRequest(
            workload(producerRateProfile=profile),
            MEMORY,
            RunOptions(duration_s=6, warmup_s=1, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    warmup = [s for s in report.outcome.intervals if s.warmup]
    assert [s.sent / s.seconds for s in warmup] == [pytest.approx(2000, rel=0.05)]
    # the measured phase's sends against the profile's over the same seconds (one second may
    # fall behind on a loaded machine and catch up later: measured 4 642 for 5 000)
    expected = [2000, 2000, 3000, 5000, 1000, 1000]
    judge_rate(report.result, sum(report.result["publishRate"]), sum(expected), rel=0.05)
    block = report.result["rateProfile"]
    assert block["segments"] == [
        {"rate": 2000.0, "duration": 2.0},
        {"rampTo": 6000.0, "duration": 2.0},
        {"rate": 1000.0, "duration": 2.0},
    ]
    history = [(change["phase"], change["rate"]) for change in block["history"]]
    assert history == [("warmup", 2000), ("measure", 3000), ("measure", 5000), ("measure", 1000)]
    assert "rateDiscovery" not in report.result


def test_a_fixed_rate_run_has_no_rate_fields(tmp_path):
    report = run_one(
        RunRequest(
            workload(producerRate=500),
            MEMORY,
            RunOptions(duration_s=1, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    assert "rateDiscovery" not in report.result
    assert "rateProfile" not in report.result
