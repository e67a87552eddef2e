"""Whole runs on the memory broker with injected faults: the result counts exactly what was done.

Two topics, two producers per topic, two subscriptions of two consumers each: a subscription's
messages are split over its consumers (duplicates must be found across them) and every
subscription counts on its own (losses and duplicates appear once per subscription).
"""

import pytest

from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.report.console import delivery_warning
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

TOPICS, PRODUCERS_PER_TOPIC, SUBSCRIPTIONS, RATE = 2, 2, 2, 4000
TOTALS = {"lost": "totalLost", "duplicates": "totalDuplicates", "outOfOrder": "totalOutOfOrder"}
OPTIONS = RunOptions(duration_s=1.5, warmup_s=0.5, stats_interval_s=0.5, drain_timeout_s=1.0)


def workload():
    return Workload.model_validate(
        {
            "name": "accounting",
            "topics": TOPICS,
            "partitionsPerTopic": 4,
            "messageSize": 64,
            "subscriptionsPerTopic": SUBSCRIPTIONS,
            "consumerPerSubscription": 2,
            "producersPerTopic": PRODUCERS_PER_TOPIC,
            "producerRate": RATE,
            "testDurationMinutes": 1,
            "warmupDurationMinutes": 0,
        }
    )


def run(tmp_path, **faults):
    spec = DriverSpec(name="Memory", kind="memory", config=faults)
    return run_one(RunRequest(workload(), spec, OPTIONS, out_dir=tmp_path))


def per_producer(report):
    """How many messages with an id each producer sent, and its topic: the loop sends round
    robin over the producers (topic ``p % TOPICS``), so the counts follow from the total."""
    producers = TOPICS * PRODUCERS_PER_TOPIC
    sent = report.result["totalMessagesSent"] - report.outcome.totals.probe_sent
    return [
        (report.outcome.topics[p % TOPICS], sent // producers + (p < sent % producers))
        for p in range(producers)
    ]


def expected_by_topic(report, per_message):
    """``per_message(n)``: how many faults a producer that sent ``n`` messages caused."""
    by_topic = dict.fromkeys(report.outcome.topics, 0)
    for topic, sent in per_producer(report):
        by_topic[topic] += per_message(sent)
    return by_topic


def rows_by_topic(report, field):
    rows = report.result["deliveryAccounting"]
    assert len(rows) == TOPICS * SUBSCRIPTIONS
    found = {}
    for row in rows:
        found.setdefault(row["topic"], set()).add(row[field])
    return found


def test_a_clean_run_counts_zero_not_null(tmp_path):
    result = run(tmp_path).result
    assert (result["totalLost"], result["totalDuplicates"], result["totalOutOfOrder"]) == (0, 0, 0)
    assert result["lossDetected"] is False
    assert result["duplicates"] == [0] * 3 and result["outOfOrder"] == [0] * 3
    assert delivery_warning(result) is None


@pytest.mark.parametrize(
    ("fault", "every", "field", "caused"),
    [
        ("dropEvery", 7, "lost", lambda n: n // 7),
        ("duplicateEvery", 5, "duplicates", lambda n: n // 5),
        # a held message with no successor is released in order by flush
        ("swapEvery", 6, "outOfOrder", lambda n: (n - 1) // 6),
    ],
)
def test_injected_faults_are_counted_exactly_per_subscription(
    tmp_path, fault, every, field, caused
):
    report = run(tmp_path, **{fault: every})
    result = report.result
    expected = expected_by_topic(report, caused)
    assert min(expected.values()) > 100  # the run was long enough to mean something
    # every subscription of a topic saw each of its producers' faults once
    assert rows_by_topic(report, field) == {topic: {count} for topic, count in expected.items()}
    totals = {name: result[total] for name, total in TOTALS.items()}
    assert totals.pop(field) == SUBSCRIPTIONS * sum(expected.values())
    assert totals == {name: 0 for name in totals}  # and nothing else was found
    assert result["lossDetected"] is (field != "outOfOrder")
    if field != "lost":  # per period; warm-up counts are in the totals only
        assert 0 < sum(result[field]) < result[TOTALS[field]]
    warning = delivery_warning(result)
    assert (warning is not None) is (field != "outOfOrder")
    if field == "lost":
        # the missing count agrees: sent to every subscription minus what arrived
        assert (
            result["totalMessagesSent"] * SUBSCRIPTIONS - result["totalMessagesReceived"]
            == result["totalLost"]
        )


def totals_sum(result, field):
    return {"duplicates": result["totalDuplicates"], "outOfOrder": result["totalOutOfOrder"]}[field]


def test_a_drain_held_by_lost_messages_does_not_dilute_the_rates(tmp_path):
    report = run(tmp_path, dropEvery=7)
    assert report.outcome.drain_seconds >= OPTIONS.drain_timeout_s  # it waited for them all
    measured = measured_intervals(report.outcome.intervals)
    assert sent_per_second(measured) == pytest.approx(RATE, rel=0.05)
    assert report.result["publishRate"][-1] == pytest.approx(RATE, rel=0.05)
