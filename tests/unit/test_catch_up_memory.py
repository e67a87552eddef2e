"""Catch-up and mixed runs on the in-process broker: phases, backlog, per-role figures."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import Listeners, OnInterval
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.outcome import CatchUpPlan
from loadgen.engine.payload import build_payloads
from loadgen.running.lifecycle import run_workload
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload
from loadgen_drivers.memory import Driver

MEMORY = DriverSpec(name="Memory", kind="memory")
GIB = 1024**3


def workload(**overrides) -> Workload:
    fields = {
        "name": "memory catch-up",
        "topics": 1,
        "partitionsPerTopic": 4,
        "messageSize": 1024,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 2,
        "producersPerTopic": 1,
        "producerRate": 10_000,
        "consumerBacklogSizeGB": 10_000 * 1024 / GIB,  # 10 000 messages: one second of load
        "testDurationMinutes": 1 / 60,
        "warmupDurationMinutes": 0,
    }
    return Workload.model_validate(fields | overrides)


OPTIONS = RunOptions(stats_interval_s=1, catch_up_timeout_s=30)


def test_the_plan_follows_omb_backlog_arithmetic():
    plan = CatchUpPlan.of(workload(consumerBacklogSizeGB=1, backlogDrainRatio=0.5))
    assert plan.target_bytes == GIB and plan.target_messages == GIB // 1024
    assert plan.drained_below == GIB // 1024 // 2  # (1 - ratio) x capacity
    assert CatchUpPlan.of(workload()).drained_below == 1000  # OMB's floor


def test_a_catch_up_run_pauses_builds_resumes_and_drains(tmp_path):
    report = run_one(RunRequest(workload(), MEMORY, OPTIONS, out_dir=tmp_path))
    block, outcome = report.result["catchUp"], report.outcome.catch_up
    assert block["targetReached"] and block["drained"]
    assert block["backlogMessages"] >= 10_000
    assert block["backlogBytes"] == block["backlogMessages"] * 1024
    assert outcome.build_started_ms < outcome.build_ended_ms < outcome.drain_ended_ms
    build = block["phases"]["build"]
    # paused: the deliveries in flight when it paused, over a build phase of a few seconds
    # (1.37 % on a slow day, as in tests/e2e/test_scenarios_cli.py); unpaused it reads ~100 %
    assert build["catchUpReadRate"] < 0.05 * build["publishRate"]
    assert block["drainRate"] > 10_000  # read faster than produced: that is a drain
    assert block["drainSeconds"] == pytest.approx(block["phases"]["drain"]["seconds"])
    assert "endToEndTailing" not in build  # no tailing subscription: OMB's catch-up
    result = report.result
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]


def test_no_interval_straddles_a_phase_boundary(tmp_path):
    report = run_one(RunRequest(workload(), MEMORY, OPTIONS, out_dir=tmp_path))
    outcome = report.outcome.catch_up
    for boundary in (outcome.build_started_ms, outcome.build_ended_ms, outcome.drain_ended_ms):
        for interval in report.outcome.intervals:
            assert not interval.start_ms < boundary < interval.end_ms


def test_a_mixed_run_keeps_the_tailing_subscription_live(tmp_path):
    chosen = workload(subscriptionsPerTopic=3, tailingSubscriptionsPerTopic=1)
    report = run_one(RunRequest(chosen, MEMORY, OPTIONS, out_dir=tmp_path))
    block = report.result["catchUp"]
    assert block["catchUpSubscriptionsPerTopic"] == 2
    # two catch-up subscriptions: the backlog counts each (OMB's subscriptions x sent)
    assert block["backlogMessages"] >= 10_000
    build = block["phases"]["build"]
    assert build["tailingReadRate"] == pytest.approx(build["publishRate"], rel=0.05)
    # paused: the deliveries in flight when it paused (1.68 % once in the pure-Python step),
    # bounded as in the catch-up test above; unpaused it reads ~100 %
    assert build["catchUpReadRate"] < 0.05 * build["publishRate"]
    drain = block["phases"]["drain"]
    assert drain["endToEndCatchUp"]["50pct"] > drain["endToEndTailing"]["50pct"]
    result = report.result
    assert result["totalMessagesReceived"] == 3 * result["totalMessagesSent"]


def test_a_backlog_that_cannot_be_built_in_time_is_reported_and_still_drained(tmp_path):
    chosen = workload(consumerBacklogSizeGB=1)  # 1 GiB at 10 MB/s: far beyond the timeout
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=1)
    report = run_one(RunRequest(chosen, MEMORY, options, out_dir=tmp_path))
    block = report.result["catchUp"]
    assert not block["targetReached"]
    assert 5_000 < block["backlogMessages"] < block["backlogTargetMessages"]
    assert block["buildSeconds"] == pytest.approx(1, abs=0.3)
    assert block["drained"]  # the drain aims at the target's floor: 1000 messages... or less


def test_an_interrupted_build_keeps_a_partial_catch_up_block(tmp_path):
    seen = []

    def interrupt_on_first(stats, backlog):
        seen.append(stats)
        if len(seen) == 1:  # the partial snapshot after it comes through here too
            raise KeyboardInterrupt

    chosen = workload(consumerBacklogSizeGB=1)
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=30)
    listeners = Listeners((OnInterval(interrupt_on_first),))
    driver = Driver.from_config(MEMORY)
    payloads = build_payloads(chosen, None)
    outcome = run_workload(LocalWorker(driver), chosen, payloads, options, listeners)
    assert outcome.incomplete and outcome.stop_reason == "interrupted"
    assert outcome.catch_up is not None and outcome.catch_up.build_ended_ms == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"tailingSubscriptionsPerTopic": 1}, "tailingSubscriptionsPerTopic"),  # = all of them
        ({"consumerBacklogSizeGB": 0, "tailingSubscriptionsPerTopic": 1}, "tailing"),
        ({"subscriptionsPerTopic": 0}, "consumerBacklogSizeGB"),
        ({"producersPerTopic": 0}, "consumerBacklogSizeGB"),
        ({"producerRateProfile": [{"rate": 1000, "duration": 5}]}, "producerRateProfile"),
    ],
)
def test_impossible_catch_up_workloads_name_the_field(overrides, field):
    with pytest.raises(ConfigError) as caught:
        workload(**overrides)
    assert field in str(caught.value)
