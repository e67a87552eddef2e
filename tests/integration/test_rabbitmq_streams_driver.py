"""The RabbitMQ Streams driver against RabbitMQ's own stream plugin, what is its own: a
subscription's consumers sharing its streams, the offset stored under its name, sub-entries,
super streams. The life cycle every log-shaped system shares (tailing, keys, catch-up, unread,
producer-only, consumer-only, two workers) is in test_runs_nats_redis_streams.py."""

import json
import time

import pytest
from tests.integration.test_runs_nats_redis_streams import SHORT, assert_exact, workload

from loadgen.base.errors import DriverError
from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.rabbitmq_node import rabbitmqctl
from loadgen.running.request import RunRequest
from loadgen.running.runner import run_one

pytestmark = pytest.mark.integration

GIB = 1024**3


@pytest.fixture(scope="module")
def streams_spec(rabbitmq_streams_broker):
    config = rabbitmq_streams_broker.driver_config
    return DriverSpec("RabbitMQ Streams", "rabbitmq-streams", config, "local rabbitmq-server")


def streams_on(broker) -> list[str]:
    listed = rabbitmqctl(broker, "list_queues", "name", "type", "--formatter", "json")
    return [queue["name"] for queue in json.loads(listed) if queue["type"] == "stream"]


def test_two_consumers_of_one_subscription_share_its_streams_exactly(streams_spec, tmp_path):
    """A stream consumer reads a whole stream: the subscription's two consumers share one
    reader, each taking every other partition's chunks, so nothing is read twice."""
    chosen = workload(consumerPerSubscription=2)
    result = run_one(RunRequest(chosen, streams_spec, SHORT, out_dir=tmp_path)).result
    assert_exact(result)


def test_a_subscription_s_consumers_split_its_partitions(streams_spec, tmp_path):
    """Consumer c of a subscription's k gets the chunks of partitions p with p % k == c."""
    driver = open_driver(streams_spec)
    topic = f"loadgen-split-{tmp_path.name[-8:]}"
    driver.create_topics([TopicSpec(topic, 4)])
    seen: list[list[tuple[int, int]]] = [[], []]
    try:
        consumers = [
            driver.create_consumer(topic, "split", lambda *m, c=c: seen[c].append((m[2], m[4])))
            for c in range(2)
        ]
        producer = driver.create_producer(topic)
        for message_id in range(400):  # NO_KEY: round-robin over the 4 partitions
            producer.send(None, bytes(64), lambda *_: None, message_id, time.time_ns())
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 10
        while sum(map(len, seen)) < 400 and time.monotonic() < deadline:
            time.sleep(0.01)
        for consumer in (*consumers, producer):
            consumer.close()
    finally:
        driver.delete_topics([topic])
        driver.close()
    assert sorted(i for part in seen for i, _ in part) == list(range(400))
    assert {p for _, p in seen[0]} == {0, 2} and {p for _, p in seen[1]} == {1, 3}


def test_a_subscription_resumes_from_the_offset_it_stored(streams_spec, tmp_path):
    """A consumer that closes stores its offset under the subscription's name; the next one
    of that subscription reads on from there: what was published in between, exactly once."""
    driver = open_driver(streams_spec)
    topic = f"loadgen-resume-{tmp_path.name[-8:]}"
    driver.create_topics([TopicSpec(topic, 1)])
    received: list[int] = []

    def publish(ids) -> None:
        for message_id in ids:
            producer.send(None, bytes(64), lambda *_: None, message_id, time.time_ns())
        assert producer.flush(10) == 0

    def read_until(count: int) -> None:
        deadline = time.monotonic() + 10
        while len(received) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    try:
        producer = driver.create_producer(topic)
        first = driver.create_consumer(topic, "resumed", lambda *m: received.append(m[2]))
        publish(range(100))
        read_until(100)
        first.close()
        publish(range(100, 250))  # nobody reading
        second = driver.create_consumer(topic, "resumed", lambda *m: received.append(m[2]))
        read_until(250)
        time.sleep(0.2)  # nothing more may come
        second.close()
        producer.close()
    finally:
        driver.delete_topics([topic])
        driver.close()
    assert received == list(range(250))


def test_sub_entries_with_gzip_arrive_exactly(streams_spec, tmp_path):
    spec = DriverSpec(
        "RabbitMQ Streams",
        "rabbitmq-streams",
        {**streams_spec.config, "subEntrySize": 50, "compression": "gzip"},
        streams_spec.source,
    )
    result = run_one(RunRequest(workload(), spec, SHORT, out_dir=tmp_path)).result
    assert_exact(result)


def test_a_super_stream_the_node_cannot_create_is_named_in_the_error(streams_spec, tmp_path):
    spec = DriverSpec(
        "RabbitMQ Streams",
        "rabbitmq-streams",
        {**streams_spec.config, "superStream": True},
        streams_spec.source,
    )
    with pytest.raises(DriverError, match="cannot create super streams"):
        run_one(RunRequest(workload(), spec, SHORT, out_dir=tmp_path))
