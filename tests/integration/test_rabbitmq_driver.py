"""The RabbitMQ driver against the real server: routing, confirms, errors, queue settings."""

import json
import time

import pika
import pytest

from harness.deliveries import Inbox, wait_for
from loadgen.base.errors import BrokerLoginRefused, BrokerUnreachable, DriverError
from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS, STAMP, TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import free_port
from loadgen.engine.keys import key_source
from loadgen_drivers.rabbitmq.local.server import rabbitmqctl
from loadgen_drivers.rabbitmq.topology import key_partition, queue_names

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


def send_all(producer, keys, payload=PAYLOAD):
    """Send one message per key (message id = its index, intended time = 1000 × index); return
    the list of errors reported by the confirms."""
    outcomes = []
    for index, key in enumerate(keys):
        producer.send(
            key,
            payload(index) if callable(payload) else payload,
            lambda error, *_: outcomes.append(error),
            index,
            1000 * index,
        )
    assert producer.flush(30) == 0
    return outcomes


def test_sixteen_partitions_get_an_even_share_without_keys(driver, rabbitmq_broker, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 16)])
    received = []
    consumer = rmq.create_consumer(
        topic_name, "sub", lambda payload, sent, *_: received.append(sent)
    )
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


def test_each_message_comes_back_with_its_id_intended_time_and_partition(driver, topic_name):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 16)])
    inbox = Inbox()
    consumer = rmq.create_consumer(topic_name, "sub", inbox)
    producer = rmq.create_producer(topic_name)
    keys = [key_source("RANDOM_NANO")(i) if i % 3 else None for i in range(3000)]
    before = time.time_ns()
    assert send_all(producer, keys, payload=lambda i: b"%d" % i) == [None] * 3000
    producer.send(None, b"probe", lambda *_: None, NO_MESSAGE_ID, NO_SEND_TIME_NS)
    assert producer.flush(10) == 0
    assert wait_for(lambda: len(inbox) >= 3001)
    got = {payload: stamp for payload, *stamp in inbox.stamps}
    assert len(got) == len(inbox) == 3001
    assert got.pop(b"probe")[1:3] == [NO_MESSAGE_ID, NO_SEND_TIME_NS]
    assert all(before <= sent <= time.time_ns() for sent, *_ in got.values())
    assert {int(p): (i, intended) for p, (_, i, intended, _) in got.items()} == {
        i: (i, 1000 * i) for i in range(3000)
    }
    partitions = {int(p): partition for p, (*_, partition) in got.items()}
    assert {partitions[i] for i in range(0, 3000, 3)} == set(range(16))  # round-robin
    assert all(partitions[i] == key_partition(keys[i], 16) for i in range(3000) if keys[i])
    producer.close()
    consumer.close()
    rmq.delete_topics([topic_name])


def test_messages_without_a_well_formed_stamp_are_skipped_and_counted(
    driver, rabbitmq_broker, topic_name
):
    rmq = driver()
    rmq.create_topics([TopicSpec(topic_name, 2)])
    inbox = Inbox()
    consumer = rmq.create_consumer(topic_name, "sub", inbox)
    connection = pika.BlockingConnection(
        pika.URLParameters(rabbitmq_broker.driver_config["amqpUris"][0])
    )
    channel = connection.channel()
    sent_ns = time.time_ns()
    for body, headers in [
        (b"send time only", {"lg-send-ns": sent_ns}),
        (b"foreign", None),
        (b"malformed", {"lg-stamp": b"short"}),
        (b"text", {"lg-stamp": "not bytes"}),
        (b"ours", {"lg-stamp": STAMP.pack(sent_ns, 7, sent_ns)}),
    ]:
        channel.basic_publish(topic_name, "1", body, pika.BasicProperties(headers=headers))
    connection.close()
    assert wait_for(lambda: len(inbox) == 1 and consumer.foreign.count == 4)
    time.sleep(0.3)  # nothing else may arrive: absence needs a wait
    assert inbox.stamps == [(b"ours", sent_ns, 7, sent_ns, 1)]
    assert consumer.foreign.count == 4
    consumer.close()
    rmq.delete_topics([topic_name])


def test_every_message_is_confirmed_exactly_once(driver, topic_name):
    rmq = driver(maxInFlight=64)
    rmq.create_topics([TopicSpec(topic_name, 4)])
    consumer = rmq.create_consumer(topic_name, "sub", lambda *_: None)
    producer = rmq.create_producer(topic_name)
    calls: dict[int, list] = {}
    for index in range(5000):
        producer.send(
            None,
            PAYLOAD,
            lambda error, *_, i=index: calls.setdefault(i, []).append(error),
            index,
            index,
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
    assert len(properties.headers["lg-stamp"]) == 24
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
    message = reachability_failure(rabbitmq_spec, uri, BrokerLoginRefused)
    assert f"guest:***@{rabbitmq_broker.address}" in message
    assert "refused the login of user 'guest'" in message
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
        rmq.create_consumer(topic_name, f"sub{i}", lambda payload, sent, *_: received.append(sent))
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


def test_without_recovery_a_connection_closed_by_the_broker_fails_the_producer_loudly(
    driver, rabbitmq_broker, topic_name
):
    rmq = driver(recoveryIntervalMs=0)
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
    producer.send(None, PAYLOAD, lambda error, *_: errors.append(error), 10, 10)
    assert errors == [producer.failure]
    producer.close()
    rmq.delete_topics([topic_name])


def test_a_connection_closed_by_the_broker_is_reopened_and_both_sides_go_on(
    driver, rabbitmq_broker, topic_name
):
    rmq = driver(recoveryIntervalMs=200)
    rmq.create_topics([TopicSpec(topic_name, 2)])
    received = []
    consumer = rmq.create_consumer(
        topic_name, "sub", lambda payload, sent, message_id, *_: received.append(message_id)
    )
    producer = rmq.create_producer(topic_name)
    outcomes = []  # (message id, error) as the confirms (or the loss) report them
    closed_at = None
    deadline = time.monotonic() + 20
    message_id = 0
    while time.monotonic() < deadline:

        def on_done(error, *_, i=message_id):
            outcomes.append((i, error))

        producer.send(None, PAYLOAD, on_done, message_id, 0)
        message_id += 1
        producer.poll(0.01)
        if message_id == 50:
            rabbitmqctl(rabbitmq_broker, "close_all_connections", "closed by the test")
            closed_at = message_id
        failed = [i for i, error in outcomes if error is not None]
        recovered = [i for i, error in outcomes if error is None and failed and i > max(failed)]
        if len(recovered) >= 50:
            break
    producer.flush(10)
    assert closed_at is not None and failed, "no send failed while the connection was gone"
    assert all("closed by the test" in str(e) for _, e in outcomes if e is not None)
    assert producer.failure is None
    assert len(recovered) >= 50, "sending did not resume on the reopened connection"
    deadline = time.monotonic() + 10
    while not set(recovered) <= set(received) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(recovered) <= set(received)  # the consumer is back on its queues too
    assert consumer.failure is None
    producer.close()
    consumer.close()
    rmq.delete_topics([topic_name])


def test_stream_queues_work_with_manual_acks_and_a_prefetch(driver, rabbitmq_broker, topic_name):
    rmq = driver(queueType="STREAM", prefetch=100)
    rmq.create_topics([TopicSpec(topic_name, 2)])
    received = []
    consumer = rmq.create_consumer(
        topic_name, "sub", lambda payload, sent, *_: received.append(sent)
    )
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
