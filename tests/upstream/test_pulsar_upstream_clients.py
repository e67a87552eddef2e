"""The Pulsar driver on Apache Pulsar's own standalone, where pulsar-lite simplifies: every
subscription type with exact counts (pulsar-lite's Exclusive and Failover deliver duplicates),
partitioned topics made through the admin REST (pulsar-lite has one broker-wide partition
count), batching off and on, small and large receiver queues (a pulsar-lite catch-up stalls
above 200), and a catch-up through a backlog, with OMB's settings and no stand-in's.
"""

from __future__ import annotations

import pytest

from harness.rates import skip_if_host_busy
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload
from loadgen_drivers.pulsar.local.upstream import start_upstream_pulsar

pytestmark = [pytest.mark.upstream, pytest.mark.usefixtures("pulsar_can_start")]
GIB = 1024**3


@pytest.fixture(scope="module")
def pulsar_upstream():
    broker = start_upstream_pulsar()
    yield broker
    broker.stop()


def spec(broker, consumer: dict | None = None, producer: dict | None = None) -> DriverSpec:
    config = broker.driver_config
    return DriverSpec(
        "Pulsar",
        "pulsar",
        {
            **config,
            "consumer": {**config["consumer"], **(consumer or {})},
            "producer": {**config["producer"], **(producer or {})},
        },
        "apache-pulsar",
    )


def workload(**changes) -> Workload:
    return Workload.model_validate(
        {
            "name": "pulsar upstream",
            "topics": 1,
            "partitionsPerTopic": 4,
            "messageSize": 512,
            "subscriptionsPerTopic": 1,
            "producersPerTopic": 1,
            "consumerPerSubscription": 2,
            "producerRate": 3_000,
            "testDurationMinutes": 8 / 60,
            "warmupDurationMinutes": 0,
            **changes,
        }
    )


def exact(report) -> dict:
    result = report.result
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    return result


@pytest.mark.parametrize(
    ("subscription", "consumers"),
    [("Exclusive", 1), ("Failover", 2), ("Shared", 2), ("Key_Shared", 2)],
)
def test_every_subscription_type_receives_each_message_once(
    pulsar_upstream, subscription, consumers, tmp_path
):
    chosen = workload(consumerPerSubscription=consumers)
    driver = spec(pulsar_upstream, consumer={"subscriptionType": subscription})
    report = run_one(RunRequest(chosen, driver, RunOptions(stats_interval_s=1), out_dir=tmp_path))
    result = exact(report)
    assert result["totalMessagesSent"] >= 0.95 * 3_000 * 8


@pytest.mark.parametrize(("batching", "receiver_queue"), [(False, 10), (True, 10), (True, 10_000)])
def test_batching_and_receiver_queues_keep_counts_exact(
    pulsar_upstream, batching, receiver_queue, tmp_path
):
    driver = spec(
        pulsar_upstream,
        consumer={"receiverQueueSize": receiver_queue},
        producer={"batchingEnabled": batching},
    )
    report = run_one(
        RunRequest(workload(), driver, RunOptions(stats_interval_s=1), out_dir=tmp_path)
    )
    exact(report)


def test_a_catch_up_through_a_backlog_of_large_receiver_queues_drains_exactly(
    pulsar_upstream, tmp_path
):
    """pulsar-lite stalls here above 200 messages a queue; OMB's 10,000 on Apache Pulsar."""
    chosen = workload(
        subscriptionsPerTopic=2,
        tailingSubscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producerRate=4_000,
        consumerBacklogSizeGB=40_000 * 512 / GIB,  # ten seconds of publishing
        testDurationMinutes=5 / 60,
    )
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=90)
    report = run_one(RunRequest(chosen, spec(pulsar_upstream), options, out_dir=tmp_path))
    block = report.result["catchUp"]
    if not block["drained"]:
        skip_if_host_busy(report.result, "the drain")
    assert block["targetReached"] and block["drained"], block
    result = report.result
    assert result["totalMessagesReceived"] == 2 * result["totalMessagesSent"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
