"""The RabbitMQ driver against the real server: routing, confirms, errors, queue settings."""

import json
import time

import pika
import pytest

from drivers.rabbitmq.topology import key_partition, queue_names
from loadgen.driver import TopicSpec, open_driver
from loadgen.errors import BrokerUnreachable, DriverError
from loadgen.keys import key_source
from loadgen.spec.driver_spec import DriverSpec
from loadgen.testing.process import free_port
from loadgen.testing.rabbitmq import rabbitmqctl

pytestmark = pytest.mark.integration

PAYLOAD = b"p" * 256


def driver_for(spec, **settings):
    return open_driver(DriverSpec(spec.name, spec.kind, {**spec.config, **settings}, spec.source))


@pytest.fixture
def topic_name(request):
    return f"lg-test-{request.node.name[:40]}-{time.monotonic_ns() % 10**9}"


@pytest.fixture
def driver(rabbitmq_spec):
    opened = []

    def make(**settings):
        opened.append(driver_for(rabbitmq_spec, **settings))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


def queue_depths(rabbitmq_broker, names):
    """Messages ready in each queue, as the broker reports them (passive declare)."""
    connection = pika.BlockingConnection(
        pika.URLParameters(rabbitmq_broker.driver_config["amqpUris"][0])
    )
    try:
        channel = connection.channel()
        return {
            name: channel.queue_declare(name, passive=True).method.message_count for name in names
        }
    finally:
        connection.close()


def send_all(producer, keys):
    """Send one message per key; return the list of errors reported by the confirms."""
    outcomes = []
    for key in keys:
        producer.send(key, PAYLOAD, lambda error, *_: outcomes.append(error))
    assert producer.flush(30) == 0
    return outcomes


def test_sixteen_partitions_get_an_even_share_without_keys(driver, rabbitmq_broker, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 16)])
    received = []
    consumer = rmq.create_consumer(topic_name, "sub", lambda payload, sent: received.append(sent))
    consumer.pause()
    producer = rmq.create_producer(topic_name)
    errors = send_all(producer, [None] * 1600)
    assert errors == [None] * 1600
    depths = queue_depths(rabbitmq_broker, queue_names(topic_name, "sub", 16))
    assert sorted(depths.values()) == [100] * 16
    assert received == []  # paused at the broker: nothing was delivered
    consumer.resume()
    deadline = time.monotonic() + 10
    while len(received) < 1600 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(received) == 1600
    producer.close()
    consumer.close()
    rmq.delete_topics([topic_name])


def test_keyed_messages_go_to_the_partition_of_their_key(driver, rabbitmq_broker, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 16)])
    rmq.create_consumer(topic_name, "sub", lambda *_: None).pause()
    keys = [key_source("RANDOM_NANO")(i) for i in range(3200)]
    producer = rmq.create_producer(topic_name)
    assert send_all(producer, keys) == [None] * 3200
    expected = [0] * 16
    for key in keys:
        expected[key_partition(key, 16)] += 1
    depths = queue_depths(rabbitmq_broker, queue_names(topic_name, "sub", 16))
    assert list(depths.values()) == expected
    assert min(expected) > 3200 / 16 * 0.6  # and the spread is fair
    producer.close()
    rmq.delete_topics([topic_name])


def test_every_message_is_confirmed_exactly_once(driver, topic_name):
    rmq = driver(maxInFlight=64)
    rmq.create_topics([TopicSpec(topic_name, 4)])
    consumer = rmq.create_consumer(topic_name, "sub", lambda *_: None)
    producer = rmq.create_producer(topic_name)
    calls: dict[int, list] = {}
    for index in range(5000):
        producer.send(
            None, PAYLOAD, lambda error, *_, i=index: calls.setdefault(i, []).append(error)
        )
    assert producer.flush(30) == 0
    assert len(calls) == 5000
    assert all(outcome == [None] for outcome in calls.values())
    producer.close()
    consumer.close()
    rmq.delete_topics([topic_name])


def test_unroutable_messages_come_back_as_errors(driver, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 2)])  # no subscription: no queue is bound
    producer = rmq.create_producer(topic_name)
    errors = send_all(producer, [None] * 50)
    assert len(errors) == 50
    assert all(isinstance(error, DriverError) and "returned" in str(error) for error in errors)
    producer.close()
    rmq.delete_topics([topic_name])


def test_nacked_messages_are_errors(driver, rabbitmq_broker, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 1)])
    connection = pika.BlockingConnection(
        pika.URLParameters(rabbitmq_broker.driver_config["amqpUris"][0])
    )
    channel = connection.channel()
    full_after_ten = {"x-max-length": 10, "x-overflow": "reject-publish"}
    channel.queue_declare(f"{topic_name}-capped", arguments=full_after_ten)
    channel.queue_bind(f"{topic_name}-capped", topic_name, routing_key="0")
    producer = rmq.create_producer(topic_name)
    errors = send_all(producer, [None] * 30)
    assert errors[:10] == [None] * 10
    assert len(errors) == 30
    assert all(isinstance(error, DriverError) and "nacked" in str(error) for error in errors[10:])
    producer.close()
    channel.queue_delete(f"{topic_name}-capped")
    connection.close()
    rmq.delete_topics([topic_name])


def test_quorum_queues_and_persistent_messages_reach_the_broker(
    driver, rabbitmq_broker, topic_name
):
    rmq = driver(queueType="QUORUM", messagePersistence=True)
    rmq.create_topics([TopicSpec(topic_name, 2)])
    rmq.create_consumer(topic_name, "sub", lambda *_: None).pause()
    producer = rmq.create_producer(topic_name)
    assert send_all(producer, [None] * 4) == [None] * 4
    listing = json.loads(
        rabbitmqctl(
            rabbitmq_broker, "list_queues", "name", "type", "durable", "--formatter", "json"
        )
    )
    ours = {q["name"]: q for q in listing if q["name"].startswith(topic_name)}
    assert set(ours) == set(queue_names(topic_name, "sub", 2))
    assert all(q["type"] == "quorum" and q["durable"] for q in ours.values())
    connection = pika.BlockingConnection(
        pika.URLParameters(rabbitmq_broker.driver_config["amqpUris"][0])
    )
    _, properties, _ = connection.channel().basic_get(queue_names(topic_name, "sub", 2)[0])
    assert properties.delivery_mode == 2
    assert isinstance(properties.headers["lg-send-ns"], int)
    connection.close()
    producer.close()
    rmq.delete_topics([topic_name])
    remaining = json.loads(
        rabbitmqctl(rabbitmq_broker, "list_queues", "name", "--formatter", "json")
    )
    assert not [q for q in remaining if q["name"].startswith(topic_name)]


def reachability_failure(spec, uri, expected):
    """The message of the ``expected`` error ``check_reachable`` raises for ``uri``, in < 15 s."""
    rmq = driver_for(spec, amqpUris=[uri])
    started = time.monotonic()
    with pytest.raises(expected) as caught:
        rmq.check_reachable(10)
    assert time.monotonic() - started < 15
    return str(caught.value)


def test_a_closed_port_fails_fast_naming_the_uri_without_its_password(rabbitmq_spec):
    uri = f"amqp://guest:s3cret@127.0.0.1:{free_port()}/%2F"
    message = reachability_failure(rabbitmq_spec, uri, BrokerUnreachable)
    assert "guest:***@127.0.0.1" in message
    assert "s3cret" not in message


def test_bad_credentials_fail_fast_naming_the_uri_without_its_password(
    rabbitmq_broker, rabbitmq_spec
):
    uri = f"amqp://guest:wr0ng@{rabbitmq_broker.address}/%2F"
    message = reachability_failure(rabbitmq_spec, uri, DriverError)
    assert f"guest:***@{rabbitmq_broker.address}" in message
    assert "credentials" in message
    assert "wr0ng" not in message


def connection_channels(rabbitmq_broker):
    listing = rabbitmqctl(rabbitmq_broker, "list_connections", "channels", "--formatter", "json")
    return sorted(c["channels"] for c in json.loads(listing or "[]"))


def test_clients_share_connections_one_channel_each(driver, rabbitmq_broker, topic_name):
    before = connection_channels(rabbitmq_broker)
    rmq = driver(producersPerConnection=4, consumersPerConnection=3)
    rmq.create_topics([TopicSpec(topic_name, 4)])
    received = []
    consumers = [
        rmq.create_consumer(topic_name, f"sub{i}", lambda payload, sent: received.append(sent))
        for i in range(3)
    ]
    producers = [rmq.create_producer(topic_name) for _ in range(4)]
    assert connection_channels(rabbitmq_broker) == sorted([*before, 3, 4])
    for producer in producers:
        assert send_all(producer, [None] * 100) == [None] * 100
    deadline = time.monotonic() + 10
    while len(received) < 1200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(received) == 1200  # 400 sent, 3 subscriptions
    for client in (*producers, *consumers):
        client.close()
    rmq.delete_topics([topic_name])
    deadline = time.monotonic() + 5
    while connection_channels(rabbitmq_broker) != before:
        assert time.monotonic() < deadline, "closing every client must close its connections"
        time.sleep(0.1)


def test_a_connection_closed_by_the_broker_fails_the_producer_loudly(
    driver, rabbitmq_broker, topic_name
):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 1)])
    rmq.create_consumer(topic_name, "sub", lambda *_: None)
    producer = rmq.create_producer(topic_name)
    assert send_all(producer, [None] * 10) == [None] * 10
    rabbitmqctl(rabbitmq_broker, "close_all_connections", "closed by the test")
    deadline = time.monotonic() + 10
    while producer.failure is None and time.monotonic() < deadline:
        producer.poll(0.05)
    assert "closed by the test" in str(producer.failure)
    errors = []
    producer.send(None, PAYLOAD, lambda error, *_: errors.append(error))
    assert errors == [producer.failure]
    producer.close()
    rmq.delete_topics([topic_name])


def test_stream_queues_work_with_manual_acks_and_a_prefetch(driver, rabbitmq_broker, topic_name):
    rmq = driver(queueType="STREAM", prefetch=100)
    rmq.create_topics([TopicSpec(topic_name, 2)])
    received = []
    consumer = rmq.create_consumer(topic_name, "sub", lambda payload, sent: received.append(sent))
    producer = rmq.create_producer(topic_name)
    assert send_all(producer, [None] * 300) == [None] * 300
    deadline = time.monotonic() + 10
    while len(received) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(received) == 300
    listing = json.loads(
        rabbitmqctl(rabbitmq_broker, "list_queues", "name", "type", "--formatter", "json")
    )
    assert {q["type"] for q in listing if q["name"].startswith(topic_name)} == {"stream"}
    producer.close()
    consumer.close()
    rmq.delete_topics([topic_name])
