"""A half-minute tailing run and a catch-up read on 16-partition pulsar-lite topics.

Half a minute, not OMB's one: holding the rate within 1 %, receiving every message once and
accounting for what the broker still holds mean the same over three 10-s periods as over six.

pulsar-lite's limits shape the settings (loadgen_drivers.pulsar.local.lite): Shared
subscriptions (its Exclusive/Failover ones deliver duplicates), receiver queues of 200 (a
partitioned catch-up stalls with larger ones), and a new Earliest subscription instead of seek
(broken). Its partition count is broker-wide: the fixture's broker makes 16 partitions per topic.

pulsar-lite sometimes leaves the last entries of a partition undispatched until the next publish
on that partition or a new consumer on the subscription; a run's final messages can then miss
the drain (8 of 331,846 once in CI; reproduced with a bare client while the broker was frozen
for tens of milliseconds at a time). The fixture's broker has the write-buffer mark that makes
it rarer (loadgen_drivers.pulsar.local.lite). After the run a new consumer on the run's subscription
reads
what the broker still holds: every message was received by loadgen or is held there, and
loadgen's result counts those it did not receive as lost.
"""

import time
from dataclasses import dataclass

import pulsar
import pytest

from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen_drivers.pulsar import consumer as pulsar_consumer
from loadgen_drivers.pulsar.local.lite import start_pulsar_lite
from loadgen_drivers.pulsar.stamp import read_stamp

pytestmark = pytest.mark.integration

HELD_READ_IDLE_MS = 3_000
"""How long the read of what the broker holds waits for one more message before it ends."""


@pytest.fixture(scope="module")
def pulsar_broker():
    """A pulsar-lite of this module's own: what it holds after the run is the run's alone."""
    broker = start_pulsar_lite()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def pulsar_spec(pulsar_broker):
    return DriverSpec("Pulsar", "pulsar", pulsar_broker.driver_config, "pulsar-lite")


@pytest.fixture(scope="module")
def deliveries():
    """The send time of every message any Pulsar consumer delivered (unique per message:
    duplicates show), and each consumer's topic and subscription."""
    seen = Deliveries([], set())
    original = pulsar_consumer.PulsarConsumer.__init__

    def spying(self, client, topic, subscription, on_message, *rest):
        def on_message_too(payload, sent_ns, *stamp):
            seen.send_times.append(sent_ns)
            on_message(payload, sent_ns, *stamp)

        seen.subscriptions.add((topic, subscription))
        original(self, client, topic, subscription, on_message_too, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pulsar_consumer.PulsarConsumer, "__init__", spying)
        yield seen


@dataclass
class Deliveries:
    send_times: list[int]
    subscriptions: set[tuple[str, str]]


@pytest.fixture(scope="module")
def half_minute_run(pulsar_spec, tailing, deliveries, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run_one(
        RunRequest(
            tailing(5_000, minutes=0.5), pulsar_spec, RunOptions(stats_interval_s=10), out_dir=out
        )
    )


@pytest.fixture(scope="module")
def held_by_the_broker(half_minute_run, pulsar_broker, deliveries):
    """Send times of what the broker still holds for the run's subscriptions once loadgen
    closed them (not delivered, or delivered and not acknowledged), read by a new consumer."""
    client = pulsar.Client(pulsar_broker.driver_config["client"]["serviceUrl"])
    held = []
    try:
        for topic, subscription in deliveries.subscriptions:
            consumer = client.subscribe(
                topic, subscription, consumer_type=pulsar.ConsumerType.Shared
            )
            while True:
                try:
                    message = consumer.receive(timeout_millis=HELD_READ_IDLE_MS)
                except pulsar.Timeout:
                    break
                held.append(read_stamp(message.data(), message.properties)[0])
                consumer.acknowledge(message)
            consumer.close()
    finally:
        client.close()
    return held


@pytest.mark.long
def test_half_a_minute_at_5k_on_16_partitions_holds_the_rate(half_minute_run):
    rate = sent_per_second(measured_intervals(half_minute_run.outcome.intervals))
    assert rate == pytest.approx(5_000, rel=0.01)


@pytest.mark.long
def test_half_a_minute_at_5k_receives_every_message_once(half_minute_run, deliveries):
    result = half_minute_run.result
    assert result["driver"] == "Pulsar"
    assert result["totalPublishErrors"] == 0
    assert result["totalMessagesSent"] > 150_000
    assert len(deliveries.subscriptions) == 1
    assert len(deliveries.send_times) == result["totalMessagesReceived"]
    assert len(set(deliveries.send_times)) == len(deliveries.send_times)  # no duplicates
    assert 0 < result["aggregatedEndToEndLatency50pct"] < result["aggregatedEndToEndLatencyMax"]
    assert result["aggregatedPublishLatency99pct"] > 0


@pytest.mark.long
def test_what_loadgen_did_not_receive_the_broker_still_holds(
    half_minute_run, deliveries, held_by_the_broker
):
    """Each message was received by loadgen or is held by the broker, and loadgen counts the
    ones it did not receive as lost. The broker may also hold some that loadgen received: a
    batch comes again whole unless all its messages were acknowledged."""
    result = half_minute_run.result
    received, held = set(deliveries.send_times), set(held_by_the_broker)
    assert len(received | held) == result["totalMessagesSent"], (
        f"sent {result['totalMessagesSent']}, loadgen received {len(received)}, the broker "
        f"held {len(held)} ({len(held & received)} of them received by loadgen too)"
    )
    assert result["totalLost"] == len(held - received)
    # stragglers, not a trend (224 at once was the most seen, with the broker frozen again and
    # again): a driver that acknowledged nothing would leave everything held
    assert len(held_by_the_broker) <= result["totalMessagesSent"] // 100


def test_a_new_earliest_subscription_reads_a_partitioned_backlog_fully(pulsar_spec):
    """Catch-up the way pulsar-lite allows it: a backlog first, then a fresh subscription."""
    config = {
        **pulsar_spec.config,
        "consumer": {**pulsar_spec.config["consumer"], "subscriptionInitialPosition": "Earliest"},
    }
    driver = open_driver(DriverSpec("Pulsar", "pulsar", config, "pulsar-lite"))
    topic = f"{driver.topic_name_prefix}-catch-up-{time.monotonic_ns()}"
    driver.create_topics([TopicSpec(topic, 16)])
    producer = driver.create_producer(topic)
    backlog = 50_000
    errors = []
    for index in range(backlog):
        producer.send(
            None, b"%d" % index, lambda error, *_: error and errors.append(error), index, 0
        )
    assert producer.flush(60) == 0
    assert errors == []
    received = []
    started = time.monotonic()
    consumer = driver.create_consumer(topic, "late", lambda payload, *_: received.append(payload))
    deadline = started + 60
    while len(received) < backlog and time.monotonic() < deadline:
        time.sleep(0.1)
    drain_s = time.monotonic() - started
    time.sleep(0.5)
    assert len(received) == backlog, f"read {len(received)} of {backlog} in {drain_s:.1f} s"
    assert len(set(received)) == backlog
    consumer.close()
    producer.close()
    driver.close()
