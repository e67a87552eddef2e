"""Catch-up, mixed, producer-only and consumer-only runs against a real (tansu) Kafka broker."""

import threading

import pytest

from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def workload(**fields) -> Workload:
    base = {
        "name": "scenario",
        "topics": 1,
        "partitionsPerTopic": 16,
        "messageSize": 1024,
        "subscriptionsPerTopic": 1,
        "producersPerTopic": 1,
        "consumerPerSubscription": 1,
        "producerRate": 40_000,
        "testDurationMinutes": 0.1,
        "warmupDurationMinutes": 0,
    }
    return Workload.model_validate(base | fields)


OPTIONS = RunOptions(stats_interval_s=1, catch_up_timeout_s=120)


@pytest.fixture(scope="module")
def catch_up_run(kafka_spec, tmp_path_factory):
    """OMB's catch-up run with a 205 MiB backlog (0.2 GiB of 1 KiB messages)."""
    chosen = workload(name="catch-up", consumerBacklogSizeGB=0.2)
    return run_one(
        RunRequest(chosen, kafka_spec, OPTIONS, out_dir=tmp_path_factory.mktemp("catch-up"))
    )


def test_a_catch_up_run_builds_a_200_mb_backlog_and_times_its_drain(catch_up_run):
    result = catch_up_run.result
    block = result["catchUp"]
    assert block["targetReached"] and block["drained"]
    assert block["backlogBytes"] >= 200 * MIB
    assert block["backlogMessages"] >= block["backlogTargetMessages"] == 209_715
    assert 0 < block["drainSeconds"] < 120
    # the drain read the backlog faster than producers added to it, or it would never drain
    assert block["drainRate"] > block["phases"]["drain"]["publishRate"]
    assert block["phases"]["build"]["catchUpReadRate"] < 0.01 * 40_000  # paused while building
    steady = block["phases"]["steady"]
    assert steady["seconds"] >= 6 and steady["catchUpReadRate"] == pytest.approx(40_000, rel=0.1)
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert result["totalPublishErrors"] == 0
    assert result["totalLost"] == result["totalDuplicates"] == result["totalOutOfOrder"] == 0


def test_catch_up_phases_end_on_interval_boundaries(catch_up_run):
    outcome = catch_up_run.outcome.catch_up
    boundaries = {outcome.build_started_ms, outcome.build_ended_ms, outcome.drain_ended_ms}
    ends = {interval.end_ms for interval in catch_up_run.outcome.intervals}
    starts = {interval.start_ms for interval in catch_up_run.outcome.intervals}
    assert outcome.build_ended_ms in ends and outcome.build_ended_ms in starts
    assert outcome.drain_ended_ms in ends and outcome.drain_ended_ms in starts
    assert len(boundaries) == 3


def test_a_mixed_run_reports_tailing_and_catch_up_apart(kafka_spec, tmp_path):
    chosen = workload(
        name="mixed",
        subscriptionsPerTopic=2,
        tailingSubscriptionsPerTopic=1,
        consumerBacklogSizeGB=0.05,
        producerRate=20_000,
    )
    report = run_one(RunRequest(chosen, kafka_spec, OPTIONS, out_dir=tmp_path))
    block = report.result["catchUp"]
    assert block["drained"] and block["tailingSubscriptionsPerTopic"] == 1
    build, drain = block["phases"]["build"], block["phases"]["drain"]
    # while the catch-up subscription is paused, the tailing one keeps up with the producers
    assert build["tailingReadRate"] == pytest.approx(build["publishRate"], rel=0.1)
    assert build["catchUpReadRate"] < 0.01 * 20_000
    assert drain["catchUpReadRate"] > drain["publishRate"]
    for phase in ("build", "drain", "steady"):
        assert block["phases"][phase]["endToEndTailing"]["99pct"] > 0
    # catch-up messages waited in the backlog; tailing ones did not
    assert drain["endToEndCatchUp"]["50pct"] > 10 * build["endToEndTailing"]["50pct"]
    histograms = report.result["histograms"]
    assert {"endToEndTailing", "endToEndCatchUp"} <= set(histograms)
    assert report.result["totalMessagesReceived"] == 2 * report.result["totalMessagesSent"]


def test_a_producer_only_run_sends_without_consumers(kafka_spec, tmp_path):
    chosen = workload(name="producer-only", subscriptionsPerTopic=0, producerRate=5_000)
    report = run_one(RunRequest(chosen, kafka_spec, OPTIONS, out_dir=tmp_path))
    result = report.result
    assert result["totalMessagesSent"] > 0.9 * 5_000 * 6
    assert result["totalMessagesReceived"] == 0
    assert result["aggregatedPublishLatency99pct"] > 0
    assert result["aggregatedEndToEndLatency99pct"] == 0


def test_a_consumer_only_run_reads_a_topic_another_run_fills(kafka_spec, tmp_path):
    """A producer-only run fills a named topic while a consumer-only run reads it."""
    topic = f"loadgen-consumer-only-{tmp_path.name[-8:]}"
    filling = workload(name="filler", subscriptionsPerTopic=0, producerRate=2_000)
    reading = workload(name="reader", producersPerTopic=0, testDurationMinutes=4 / 60)
    named = RunOptions(stats_interval_s=1, topic_names=(topic,))
    filler = threading.Thread(
        target=run_one,
        args=(RunRequest(filling, kafka_spec, named, out_dir=tmp_path),),
        kwargs={},
    )
    filler.start()
    try:
        report = run_one(RunRequest(reading, kafka_spec, named, out_dir=tmp_path))
    finally:
        filler.join(timeout=60)
    result = report.result
    assert result["totalMessagesSent"] == 0
    assert result["totalMessagesReceived"] > 2_000  # 4 s of a 2k msg/s producer, give or take
    assert result["aggregatedEndToEndLatency50pct"] > 0
    assert result["totalLost"] is None  # it cannot know what the other run's broker acknowledged


def test_consumers_joining_and_leaving_a_group_mid_run_lose_and_repeat_nothing(
    kafka_spec, tmp_path
):
    """A group rebalances twice under load: each message read once, the changes recorded where
    the intervals show their pause (on Apache Kafka 4.4.0 the leave stalls the partitions of
    the leavers for up to a heartbeat, 3 s)."""
    if kafka_spec.source == "tansu":
        # passed alone, but in a loaded full suite (2026-12-07) tansu's group coordinator lost
        # the remaining members' partitions after the leave: 18,230 of 30,006 read; it runs on
        # Apache Kafka in the upstream step
        pytest.skip("tansu's group coordinator loses partitions through a leave under load")
    chosen = workload(
        name="churn", partitionsPerTopic=6, producerRate=2000, consumerPerSubscription=2,
        testDurationMinutes=0.25,
        consumerChanges=[{"at": "4s", "join": 1}, {"at": "9s", "leave": 2}],
    )  # fmt: skip
    result = run_one(RunRequest(chosen, kafka_spec, OPTIONS, out_dir=tmp_path)).result
    changes = result["consumerChanges"]
    assert [(c["join"], c["leave"], c["consumersPerSubscription"]) for c in changes] == [
        (1, 0, 3),
        (0, 2, 1),
    ]
    assert changes[0]["timeMs"] < changes[1]["timeMs"] and all(c["seconds"] < 5 for c in changes)
    assert 0 < result["totalMessagesSent"] == result["totalMessagesReceived"]
    assert result["totalLost"] == result["totalDuplicates"] == 0
