"""A one-minute tailing run and a catch-up read on 16-partition pulsar-lite topics.

pulsar-lite's limits shape the settings (loadgen.testing.pulsar): Shared subscriptions (its
Exclusive/Failover ones deliver duplicates), receiver queues of 200 (a partitioned catch-up
stalls with larger ones), and a new Earliest subscription instead of seek (broken). Its
partition count is broker-wide: the fixture's broker makes 16 partitions per topic.
"""

import time

import pytest

from drivers.pulsar import consumer as pulsar_consumer
from loadgen.driver import TopicSpec, open_driver
from loadgen.runner import run_one
from loadgen.scenarios.tailing import RunOptions
from loadgen.spec.driver_spec import DriverSpec
from loadgen.stats import measured_intervals, sent_per_second
from loadgen.testing.pulsar import start_pulsar_lite

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pulsar_broker():
    """A pulsar-lite of this module's own. On the session's shared one, after the other
    modules' runs, the one-minute run fell short of the rate once in three full-suite runs."""
    broker = start_pulsar_lite()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def pulsar_spec(pulsar_broker):
    return DriverSpec("Pulsar", "pulsar", pulsar_broker.driver_config, "pulsar-lite")


@pytest.fixture(scope="module")
def delivered_send_times():
    """Every send time any Pulsar consumer delivered (unique per message: duplicates show)."""
    seen: list[int] = []
    original = pulsar_consumer.PulsarConsumer.__init__

    def spying(self, client, topic, subscription, on_message, *rest):
        def on_message_too(payload, sent_ns, *stamp):
            seen.append(sent_ns)
            on_message(payload, sent_ns, *stamp)

        original(self, client, topic, subscription, on_message_too, *rest)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pulsar_consumer.PulsarConsumer, "__init__", spying)
        yield seen


@pytest.fixture(scope="module")
def one_minute_run(pulsar_spec, tailing, delivered_send_times, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run_one(tailing(5_000), None, pulsar_spec, out, RunOptions(stats_interval_s=10))


def test_one_minute_at_5k_on_16_partitions_holds_the_rate(one_minute_run):
    rate = sent_per_second(measured_intervals(one_minute_run.outcome.intervals))
    assert rate == pytest.approx(5_000, rel=0.01)


def test_one_minute_at_5k_receives_every_message_once(one_minute_run, delivered_send_times):
    result = one_minute_run.result
    assert result["driver"] == "Pulsar"
    assert result["totalPublishErrors"] == 0
    assert result["totalMessagesSent"] > 300_000
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert len(delivered_send_times) == result["totalMessagesReceived"]
    assert len(set(delivered_send_times)) == len(delivered_send_times)  # no duplicates
    assert 0 < result["aggregatedEndToEndLatency50pct"] < result["aggregatedEndToEndLatencyMax"]
    assert result["aggregatedPublishLatency99pct"] > 0


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
