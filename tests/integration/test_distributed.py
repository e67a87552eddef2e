"""Runs split over `loadgen worker` processes on loopback ports, against real brokers.

Three workers and a coordinator against tansu: the merged result must be exactly the workers'
sum — counts add up, and every percentile equals the one computed over the merged raw
histograms the workers sent. Two local processes (`--processes 2`) on RabbitMQ and Pulsar: the
consumer worker uses topics the producer worker created, and nothing is left behind.
"""

import json
import secrets

import pytest

from loadgen.base import hdr
from loadgen.distributed.placement import Placement
from loadgen.distributed.spawn import local_workers
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.stats import END_TO_END, METRICS, PUBLISH, measured_intervals, merge_all
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen_drivers.rabbitmq.local.server import rabbitmqctl

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def three_workers():
    token = secrets.token_urlsafe(16)
    with local_workers(3, token) as spawned:
        yield spawned.urls, token


def test_three_workers_merge_into_one_exact_result(three_workers, kafka_spec, tailing):
    urls, token = three_workers
    workload = tailing(3000, partitions=6).model_copy(update={"consumer_per_subscription": 2})
    # two consumers in one subscription: each consumer worker gets one, the group splits them
    options = RunOptions(duration_s=4, warmup_s=1, stats_interval_s=1)
    placement = Placement(workers=tuple(urls), token=token)

    _, result, outcome = execute(RunRequest(workload, kafka_spec, options, placement=placement))
    run = result["run"]

    assert not outcome.incomplete, outcome.stop_detail
    assert run["workers"] == urls
    # OMB's split of 3: the leader produces, the other two consume
    assert run["workerRoles"] == {urls[0]: "producer", urls[1]: "consumer", urls[2]: "consumer"}
    assert set(run["clockOffsetsMs"]) == set(urls)
    assert run["e2eClockSkewBoundMs"] is not None and run["e2eClockSkewBoundMs"] >= 0
    # workers given by URL may be on hosts of their own: their offsets correct end-to-end
    correction = run["clockCorrection"]
    assert {(p["producerWorker"], p["consumerWorker"]) for p in correction["pairs"]} == {
        (urls[0], urls[1]),
        (urls[0], urls[2]),
    }
    assert ("endToEndUncorrected" in result["histograms"]) is correction["applied"]

    per_worker = run["workerTotals"]
    assert result["totalMessagesSent"] == sum(t["sent"] for t in per_worker.values()) > 10_000
    assert result["totalMessagesReceived"] == sum(t["received"] for t in per_worker.values())
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert per_worker[urls[1]]["received"] > 0 and per_worker[urls[2]]["received"] > 0
    # the subscription's two consumers ran on two workers: their id ranges were unioned, so a
    # range missing (or counted twice) would show as lost (or duplicated) messages
    assert (result["totalLost"], result["totalDuplicates"], result["totalOutOfOrder"]) == (0, 0, 0)
    [row] = result["deliveryAccounting"]
    assert row["lost"] == row["duplicates"] == 0

    raw = outcome.worker_intervals
    assert set(raw) == set(urls)
    merged_raw = merge_all(s for intervals in raw.values() for s in measured_intervals(intervals))
    aggregate = merge_all(measured_intervals(outcome.intervals))
    assert aggregate.sent == merged_raw.sent and aggregate.received == merged_raw.received
    for metric in METRICS:
        assert result["histograms"][metric]["aggregated"] == hdr.encode(
            merged_raw.histogram(metric)
        )
    e2e = merged_raw.histogram(END_TO_END)
    assert e2e.total == aggregate.received
    assert result["aggregatedEndToEndLatency99pct"] == hdr.value_at_percentile(e2e, 99) / 1000
    publish = merged_raw.histogram(PUBLISH)
    assert result["aggregatedPublishLatency50pct"] == hdr.value_at_percentile(publish, 50) / 1000


def two_process_run(spec, workload):
    # a 30-s drain: once, with a second test suite running on the same 2 cores, one Pulsar
    # message had not arrived after the default 10 s (not seen again in 27 runs)
    options = RunOptions(duration_s=3, warmup_s=0, stats_interval_s=1, drain_timeout_s=30)
    _, result, outcome = execute(
        RunRequest(workload, spec, options, placement=Placement(processes=2))
    )
    assert not outcome.incomplete, outcome.stop_detail
    run = result["run"]
    assert list(run["workerRoles"].values()) == ["producer", "consumer"]
    assert result["totalMessagesReceived"] == result["totalMessagesSent"] > 3000
    # processes of one host share its clock: their measured offsets are noise, never applied
    assert run["clockCorrection"]["applied"] is False
    assert "endToEndUncorrected" not in result["histograms"]
    assert "aggregatedEndToEndLatencyUncorrected50pct" not in result
    return outcome


def test_two_rabbitmq_processes_share_the_exchanges_and_leave_nothing_behind(
    rabbitmq_spec, rabbitmq_broker, tailing
):
    outcome = two_process_run(rabbitmq_spec, tailing(2000, partitions=4))
    topic = outcome.topics[0]
    queues = json.loads(rabbitmqctl(rabbitmq_broker, "list_queues", "name", "--formatter", "json"))
    exchanges = json.loads(
        rabbitmqctl(rabbitmq_broker, "list_exchanges", "name", "--formatter", "json")
    )
    assert not [q for q in queues if q["name"].startswith(topic)]  # the consumer worker's
    assert topic not in {e["name"] for e in exchanges}  # the leader's


def test_two_pulsar_processes_run_one_partitioned_topic(pulsar_broker, tailing):
    spec = DriverSpec("Pulsar", "pulsar", pulsar_broker.driver_config, "pulsar-lite")
    two_process_run(spec, tailing(2000))
