"""The Kafka driver against a real tansu broker: topics, sends, subscriptions, pause, failures."""

import threading
import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from loadgen.base.errors import BrokerUnreachable
from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS, STAMP, TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_MARK, PREFIXED
from loadgen_drivers.kafka import Driver
from loadgen_drivers.kafka.driver import _start_positions

pytestmark = pytest.mark.integration


def wait_for(condition, timeout, poll=None):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        if poll:
            poll()
        time.sleep(0.01)


class Inbox:
    def __init__(self):
        self.items = []
        self.stamps = []
        self.lock = threading.Lock()

    def __call__(self, payload, sent_ns, message_id, intended_ns, partition):
        with self.lock:
            self.items.append((payload, sent_ns))
            self.stamps.append((payload, message_id, intended_ns, partition))

    def __len__(self):
        return len(self.items)


PARTITIONS = 16


@pytest.fixture
def driver(kafka_spec):
    kafka = Driver.from_config(kafka_spec)
    yield kafka
    kafka.close()


@pytest.fixture
def topic(driver):
    name = f"it-{uuid.uuid4().hex[:8]}"
    driver.create_topics([TopicSpec(name, PARTITIONS)])
    yield name
    driver.delete_topics([name])


def test_two_subscriptions_each_receive_every_message_with_its_send_time(driver, topic):
    first, second = Inbox(), Inbox()
    consumers = [
        driver.create_consumer(topic, "sub-a", first),
        driver.create_consumer(topic, "sub-b", second),
    ]
    producer = driver.create_producer(topic)
    acks = []
    before = time.time_ns()
    for i in range(2000):
        producer.send(
            b"key-%d" % (i % 20) if i % 2 else None,
            b"m%d" % i,
            lambda e, *_: acks.append(e),
            i,
            before + i,
        )
    assert producer.flush(30) == 0
    assert acks == [None] * 2000
    wait_for(lambda: len(first) == 2000 and len(second) == 2000, timeout=30)
    assert sorted(p for p, _ in first.items) == sorted(b"m%d" % i for i in range(2000))
    assert all(before <= sent <= time.time_ns() for _, sent in second.items)
    for consumer in consumers:
        consumer.close()
    producer.close()


def test_each_message_comes_back_with_its_id_intended_time_and_partition(driver, topic):
    inbox = Inbox()
    consumer = driver.create_consumer(topic, "sub-ids", inbox)
    producer = driver.create_producer(topic)
    base = time.time_ns()
    sent = {}  # payload -> (key, id, intended)
    try:
        for i in range(3000):
            key = b"key-%d" % (i % 40) if i % 3 else None
            message_id = (i % 4) << 40 | i  # a producer number and a sequence
            sent[b"m%d" % i] = (key, message_id, base - 7 * i)
            producer.send(key, b"m%d" % i, lambda *_: None, message_id, base - 7 * i)
        producer.send(None, b"probe", lambda *_: None, NO_MESSAGE_ID, NO_SEND_TIME_NS)
        assert producer.flush(30) == 0
        wait_for(lambda: len(inbox) == 3001, timeout=30)
    finally:
        consumer.close()
        producer.close()
    got = {payload: (message_id, intended, p) for payload, message_id, intended, p in inbox.stamps}
    assert len(got) == 3001
    assert got.pop(b"probe")[:2] == (NO_MESSAGE_ID, NO_SEND_TIME_NS)
    assert {payload: got[payload][:2] for payload in sent} == {
        payload: (message_id, intended) for payload, (_, message_id, intended) in sent.items()
    }
    assert {p for _, _, p in got.values()} <= set(range(PARTITIONS))
    partitions_of_key = {}
    for payload, (key, _, _) in sent.items():
        if key is not None:
            partitions_of_key.setdefault(key, set()).add(got[payload][2])
    assert len(partitions_of_key) == 40
    assert all(len(partitions) == 1 for partitions in partitions_of_key.values())
    assert len(set().union(*partitions_of_key.values())) > 1  # keys spread over partitions


def read_back(driver, topic, count):
    """``count`` messages of ``topic`` as a plain client reads them: payload and headers. Its
    partitions are assigned, not subscribed: a group join would cost the test ~20 s of
    librdkafka's default session timeout on tansu."""
    raw = Consumer(
        {"bootstrap.servers": driver.config.bootstrap_servers, "group.id": "raw-read-back"}
    )
    raw.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    messages = []
    deadline = time.monotonic() + 30
    while len(messages) < count and time.monotonic() < deadline:
        messages += [m for m in raw.consume(count, 0.5) if m.error() is None]
    raw.close()
    return messages


def test_a_payload_of_32_bytes_or_more_carries_the_stamp_in_its_first_32_and_keeps_its_size(
    driver, topic
):
    producer = driver.create_producer(topic)
    payload = bytes(range(256)) * 4
    before = time.time_ns()
    for index in range(3):
        producer.send(None, payload, lambda *_: None, index, 1000 * index)
    producer.send(None, payload[: PREFIXED.size], lambda *_: None, 3, 3000)
    assert producer.flush(30) == 0
    messages = read_back(driver, topic, 4)
    assert all(m.headers() is None for m in messages)
    long = [m.value() for m in messages if len(m.value()) == len(payload)]
    assert len(long) == 3
    assert all(data[PREFIXED.size :] == payload[PREFIXED.size :] for data in long)
    prefixes = sorted(PREFIXED.unpack_from(m.value()) for m in messages)
    assert {mark for mark, *_ in prefixes} == {PREFIX_MARK}
    assert all(before <= sent <= time.time_ns() for _, sent, _, _ in prefixes)
    assert sorted((i, intended) for _, _, i, intended in prefixes) == [
        (0, 0),
        (1, 1000),
        (2, 2000),
        (3, 3000),
    ]


def test_a_shorter_payload_carries_the_stamp_in_one_header_and_is_left_as_it_is(driver, topic):
    producer = driver.create_producer(topic)
    short = PREFIX_MARK + bytes(PREFIXED.size - len(PREFIX_MARK) - 1)  # a mark, a byte short
    before = time.time_ns()
    producer.send(None, short, lambda *_: None, 5, 77)
    assert producer.flush(30) == 0
    (message,) = read_back(driver, topic, 1)
    assert message.value() == short
    [(name, stamp)] = message.headers()
    assert name == "lg-stamp"
    sent, message_id, intended = STAMP.unpack(stamp)
    assert before <= sent <= time.time_ns()
    assert (message_id, intended) == (5, 77)


def test_messages_without_a_well_formed_stamp_are_skipped_and_counted(driver, topic):
    inbox = Inbox()
    consumer = driver.create_consumer(topic, "sub-foreign", inbox)
    raw = Producer({"bootstrap.servers": driver.config.bootstrap_servers})
    sent_ns = time.time_ns()
    try:
        raw.produce(topic, b"send time only", headers=[("lg-send-ns", sent_ns.to_bytes(8, "big"))])
        raw.produce(topic, b"foreign")
        raw.produce(topic, b"malformed", headers=[("lg-stamp", b"short")])
        raw.produce(topic, b"null", headers=[("lg-stamp", None)])
        raw.produce(topic, PREFIX_MARK + b"too short for a stamp")
        raw.produce(topic, b"ours", headers=[("lg-stamp", STAMP.pack(sent_ns, 7, sent_ns))])
        prefixed = PREFIXED.pack(PREFIX_MARK, sent_ns, 8, sent_ns - 5) + b"ours too"
        raw.produce(topic, prefixed)
        assert raw.flush(30) == 0
        wait_for(lambda: len(inbox) == 2 and consumer.foreign.count == 5, timeout=30)
        time.sleep(0.3)  # nothing else may arrive: absence needs a wait
    finally:
        consumer.close()
    assert sorted(inbox.items) == sorted([(b"ours", sent_ns), (prefixed, sent_ns)])
    assert sorted(stamp[1:3] for stamp in inbox.stamps) == [(7, sent_ns), (8, sent_ns - 5)]
    assert consumer.foreign.count == 5


def test_assigned_consumers_skip_the_group_and_each_read_every_partition(kafka_spec, topic):
    assigning = Driver.from_config(
        DriverSpec(
            name=kafka_spec.name,
            kind="kafka",
            config={**kafka_spec.config, "consumerAssignment": "assign"},
        )
    )
    # same subscription: in a group the two would split the partitions; assigned, both read all
    first, second = Inbox(), Inbox()
    consumers = [assigning.create_consumer(topic, "sub-same", inbox) for inbox in (first, second)]
    producer = assigning.create_producer(topic)
    try:  # a failure must still stop the consumer threads, or they outlive the test's clients
        for i in range(320):
            producer.send(b"key-%d" % i, b"m%d" % i, lambda *_: None, i, i)
        assert producer.flush(30) == 0
        wait_for(lambda: len(first) == 320 and len(second) == 320, timeout=30)
        consumers[0].pause()
        producer.send(None, b"later", lambda *_: None, 320, 320)
        producer.flush(10)
        wait_for(lambda: len(second) == 321, timeout=30)
        assert len(first) == 320
        consumers[0].resume()
        wait_for(lambda: len(first) == 321, timeout=30)
    finally:
        for consumer in consumers:
            consumer.close()
        producer.close()
        assigning.close()


def test_an_assigned_consumer_fixes_its_start_when_created(driver, topic):
    """Committed offsets where a group has them, the beginning (``earliest``) elsewhere: never
    left for the fetcher to look up later, when another consumer of the same subscription may
    have committed past messages this one must still read."""
    group = f"sub-{topic}"
    committing = Consumer({"bootstrap.servers": driver.config.bootstrap_servers, "group.id": group})
    try:
        committing.commit(offsets=[TopicPartition(topic, 3, 0)], asynchronous=False)
    finally:
        committing.close()
    starting = Consumer({"bootstrap.servers": driver.config.bootstrap_servers, "group.id": group})
    try:
        positions = _start_positions(starting, topic, PARTITIONS, "earliest")
    finally:
        starting.close()
    assert [(p.partition, p.offset) for p in positions] == [
        (partition, 0 if partition == 3 else OFFSET_BEGINNING) for partition in range(PARTITIONS)
    ]


def test_creating_an_existing_topic_is_not_an_error(driver, topic):
    driver.create_topics([TopicSpec(topic, 16)])


def test_paused_consumer_holds_messages_until_resumed(driver, topic):
    inbox = Inbox()
    consumer = driver.create_consumer(topic, "sub-pause", inbox)
    producer = driver.create_producer(topic)
    producer.send(None, b"first", lambda *_: None, 0, 0)
    producer.flush(10)
    wait_for(lambda: len(inbox) == 1, timeout=30)
    consumer.pause()
    for i in range(50):
        producer.send(None, b"later", lambda *_: None, 1 + i, 1 + i)
    producer.flush(10)
    time.sleep(1.0)  # absence can only be shown by waiting
    assert len(inbox) == 1
    consumer.resume()
    wait_for(lambda: len(inbox) == 51, timeout=30)
    consumer.close()
    producer.close()


def test_close_stops_the_consumer_thread(driver, topic):
    before = {t.name for t in threading.enumerate()}
    consumer = driver.create_consumer(topic, "sub-close", Inbox())
    consumer.close()
    after = {t.name for t in threading.enumerate() if t.is_alive()}
    assert not {name for name in after - before if name.startswith("kafka-consumer")}


def test_unreachable_bootstrap_fails_fast_naming_the_address():
    spec = DriverSpec(
        name="Kafka",
        kind="kafka",
        config={
            "commonConfig": "bootstrap.servers=127.0.0.1:1",
            "producerConfig": "acks=all",
            "consumerConfig": "auto.offset.reset=earliest",
        },
    )
    kafka = Driver.from_config(spec)
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as caught:
        kafka.check_reachable(3)
    assert time.monotonic() - started < 5
    assert "127.0.0.1:1" in str(caught.value)
    assert caught.value.exit_code == 3
