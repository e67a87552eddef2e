"""The Redis Streams driver against a real redis-server: where messages go, what comes back
with them, what the pool and ``MAXLEN`` settings do."""

import time

import pytest
import redis

from harness.deliveries import Inbox, wait_for
from loadgen.base.errors import DriverError
from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS, STAMP, TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.keys import key_source
from loadgen_drivers.redis.topology import key_partition, stream_keys

pytestmark = pytest.mark.integration

PAYLOAD = b"p" * 256


@pytest.fixture
def driver(redis_broker):
    opened = []

    def make(**settings):
        config = {**redis_broker.driver_config, **settings}
        opened.append(open_driver(DriverSpec("Redis Streams", "redis", config, "local")))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


@pytest.fixture
def server(redis_broker):
    host, port = redis_broker.address.rsplit(":", 1)
    with redis.Redis(host, int(port)) as client:
        yield client


@pytest.fixture
def topic(request):
    return f"lg-{request.node.name[:30]}-{time.monotonic_ns() % 10**9}"


def send_all(producer, keys, payload=PAYLOAD):
    """One message per key (id = index, intended = 1000 × index); the errors reported."""
    outcomes = []
    for index, key in enumerate(keys):
        body = payload(index) if callable(payload) else payload
        producer.send(key, body, lambda error, *_: outcomes.append(error), index, 1000 * index)
    assert producer.flush(10) == 0
    return outcomes


def test_keys_pick_their_stream_by_crc32_and_no_key_round_robins(driver, server, topic):
    rds = driver(pipelineDepth=64)
    rds.create_topics([TopicSpec(topic, 8)])
    producer = rds.create_producer(topic)
    keys = [key_source("RANDOM_NANO")(i) for i in range(1600)]
    assert send_all(producer, keys + [None] * 800) == [None] * 2400
    expected = [100] * 8  # the 800 without a key, round-robin
    for key in keys:
        expected[key_partition(key, 8)] += 1
    assert [server.xlen(key) for key in stream_keys(topic, 8)] == expected
    producer.close()
    rds.delete_topics([topic])
    assert server.exists(*stream_keys(topic, 8)) == 0


@pytest.mark.parametrize("stamp_in", ["payload", "field"])
def test_each_message_comes_back_with_its_id_intended_time_and_partition(
    driver, server, topic, stamp_in
):
    rds = driver(stampIn=stamp_in, readCount=50)
    rds.create_topics([TopicSpec(topic, 4)])
    inbox = Inbox()
    consumer = rds.create_consumer(topic, "sub", inbox)
    producer = rds.create_producer(topic)
    keys = [b"k%d" % i if i % 3 else None for i in range(2000)]
    before = time.time_ns()
    # payloads of 40 bytes (room for the prefix) and of 4 (an lg-stamp field), index last
    bodies = [(b"." * 36 if i % 2 else b"") + b"%04d" % i for i in range(2000)]
    assert send_all(producer, keys, payload=lambda i: bodies[i]) == [None] * 2000
    producer.send(None, b"probe", lambda *_: None, NO_MESSAGE_ID, NO_SEND_TIME_NS)
    producer.flush(5)
    assert wait_for(lambda: len(inbox) >= 2001)
    by_index = {}
    for payload, sent, message_id, intended, partition in inbox.stamps:
        by_index[message_id] = (payload, sent, intended, partition)
    assert len(by_index) == len(inbox) == 2001
    assert by_index.pop(NO_MESSAGE_ID)[2] == NO_SEND_TIME_NS
    assert all(before <= sent <= time.time_ns() for _, sent, _, _ in by_index.values())
    assert {i: intended for i, (_, _, intended, _) in by_index.items()} == {
        i: 1000 * i for i in range(2000)
    }
    assert all(payload[-4:] == b"%04d" % i for i, (payload, *_) in by_index.items())
    assert all(by_index[i][3] == key_partition(keys[i], 4) for i in range(2000) if keys[i])
    assert {by_index[i][3] for i in range(0, 2000, 3)} == {0, 1, 2, 3}  # round-robin
    stored = server.xrange(stream_keys(topic, 4)[0], count=1)[0][1]
    assert (b"lg-stamp" in stored) == (stamp_in == "field" or len(stored[b"payload"]) < 32)
    producer.close()
    consumer.close()
    rds.delete_subscriptions([topic])
    rds.delete_topics([topic])


def test_entries_without_a_stamp_are_skipped_and_counted(driver, server, topic):
    rds = driver()
    rds.create_topics([TopicSpec(topic, 1)])
    inbox = Inbox()
    consumer = rds.create_consumer(topic, "sub", inbox)
    sent_ns = time.time_ns()
    server.xadd(topic, {"payload": b"foreign"})
    server.xadd(topic, {"other": b"field"})
    server.xadd(topic, {"payload": b"x", "lg-stamp": b"short"})
    server.xadd(topic, {"payload": b"ours", "lg-stamp": STAMP.pack(sent_ns, 7, sent_ns)})
    assert wait_for(lambda: len(inbox) == 1 and consumer.foreign.count == 3)
    assert inbox.stamps == [(b"ours", sent_ns, 7, sent_ns, 0)]
    consumer.close()
    info = server.xinfo_groups(topic)
    assert [(g["name"], g["pending"], g["lag"]) for g in info] == [(b"sub", 0, 0)]  # all acked
    rds.delete_topics([topic])


def test_a_paused_consumer_takes_nothing_and_its_backlog_is_the_groups_lag(driver, topic):
    rds = driver()
    rds.create_topics([TopicSpec(topic, 2)])
    inbox = Inbox()
    consumer = rds.create_consumer(topic, "sub", inbox)
    consumer.pause()
    producer = rds.create_producer(topic)
    assert send_all(producer, [None] * 600) == [None] * 600
    time.sleep(0.3)  # nothing may arrive: absence needs a wait
    assert len(inbox) == 0
    assert consumer.unread(2.0) == {f"{topic}:0": 300, f"{topic}:1": 300}
    consumer.resume()
    assert wait_for(lambda: len(inbox) == 600)
    assert consumer.unread(2.0) == {f"{topic}:0": 0, f"{topic}:1": 0}
    producer.close()
    consumer.close()
    rds.delete_topics([topic])


def test_a_second_subscription_reads_everything_again(driver, topic):
    rds = driver()
    rds.create_topics([TopicSpec(topic, 3)])
    first, second = Inbox(), Inbox()
    consumers = [rds.create_consumer(topic, "a", first), rds.create_consumer(topic, "b", second)]
    producer = rds.create_producer(topic)
    assert send_all(producer, [None] * 900) == [None] * 900
    assert wait_for(lambda: len(first) == len(second) == 900)
    for each in (producer, *consumers):
        each.close()
    rds.delete_subscriptions([topic])
    rds.delete_topics([topic])


def test_maxlen_trims_each_stream_key(driver, server, topic):
    rds = driver(maxLen=100, trim="exact")
    rds.create_topics([TopicSpec(topic, 1)])
    producer = rds.create_producer(topic)
    assert send_all(producer, [None] * 500) == [None] * 500
    assert server.xlen(topic) == 100
    producer.close()
    rds.delete_topics([topic])


def test_the_pool_limit_refuses_one_client_too_many_naming_the_field(driver, topic):
    rds = driver(jedisPoolMaxTotal=1)
    rds.create_topics([TopicSpec(topic, 1)])
    producer = rds.create_producer(topic)
    with pytest.raises(DriverError, match="jedisPoolMaxTotal is 1"):
        rds.create_producer(topic)
    producer.close()
    second = rds.create_producer(topic)  # the first one's connection, given back
    second.close()
    rds.delete_topics([topic])


def test_an_error_reply_fails_its_message_only(driver, server, topic):
    rds = driver()
    rds.create_topics([TopicSpec(topic, 2)])
    server.set(f"{topic}:1", "not a stream")
    producer = rds.create_producer(topic)
    errors = send_all(producer, [None] * 10)
    assert errors[0::2] == [None] * 5
    assert all(isinstance(e, DriverError) and "WRONGTYPE" in str(e) for e in errors[1::2])
    producer.close()
    rds.delete_topics([topic])
