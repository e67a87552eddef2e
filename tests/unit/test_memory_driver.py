import threading
import time

import pytest

from drivers.memory import Driver
from loadgen.driver import TopicSpec
from loadgen.errors import ConfigError, DriverError
from loadgen.spec.driver_spec import DriverSpec


def wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.001)


class Inbox:
    def __init__(self):
        self.messages = []
        self.deliveries = []
        self.lock = threading.Lock()

    def __call__(self, payload, sent_ns, message_id, intended_ns, partition):
        with self.lock:
            self.messages.append((payload, sent_ns))
            self.deliveries.append((message_id, intended_ns, partition))


@pytest.fixture
def driver():
    memory = Driver.from_config(DriverSpec(name="mem", kind="memory"))
    memory.create_topics([TopicSpec("t", 4)])
    yield memory
    memory.close()


def test_every_subscription_receives_every_message(driver):
    first, second = Inbox(), Inbox()
    consumers = [driver.create_consumer("t", "a", first), driver.create_consumer("t", "b", second)]
    producer = driver.create_producer("t")
    acks = []
    for i in range(1000):
        producer.send(
            None if i % 2 else b"k%d" % i,
            b"%d" % i,
            lambda error, *_: acks.append(error),
            i,
            1000 + i,
        )
    wait_for(lambda: len(first.messages) == 1000 and len(second.messages) == 1000)
    assert acks == [None] * 1000
    assert sorted(p for p, _ in first.messages) == sorted(b"%d" % i for i in range(1000))
    assert all(0 < time.time_ns() - sent < 10**10 for _, sent in first.messages)
    # id and intended time come back unchanged, with the partition the message was read from
    assert sorted((m, t) for m, t, _ in first.deliveries) == [(i, 1000 + i) for i in range(1000)]
    assert {p for _, _, p in first.deliveries} == {0, 1, 2, 3}
    for consumer in consumers:
        consumer.close()


def test_consumers_of_one_subscription_split_the_partitions(driver):
    left, right = Inbox(), Inbox()
    consumers = [
        driver.create_consumer("t", "shared", left),
        driver.create_consumer("t", "shared", right),
    ]
    producer = driver.create_producer("t")
    for i in range(400):
        producer.send(None, b"%d" % i, lambda *_: None, i, 0)
    wait_for(lambda: len(left.messages) + len(right.messages) == 400)
    assert len(left.messages) == 200 and len(right.messages) == 200
    for consumer in consumers:
        consumer.close()


def test_paused_consumer_receives_nothing_until_resumed(driver):
    inbox = Inbox()
    consumer = driver.create_consumer("t", "s", inbox)
    consumer.pause()
    producer = driver.create_producer("t")
    for i in range(10):
        producer.send(None, b"x", lambda *_: None, i, 0)
    time.sleep(0.05)
    assert inbox.messages == []
    consumer.resume()
    wait_for(lambda: len(inbox.messages) == 10)
    consumer.close()


def test_consumed_entries_are_trimmed_so_memory_stays_bounded(driver):
    inbox = Inbox()
    consumer = driver.create_consumer("t", "s", inbox)
    producer = driver.create_producer("t")
    for i in range(300_000):
        producer.send(None, b"x", lambda *_: None, i, 0)
    wait_for(lambda: len(inbox.messages) == 300_000, timeout=20)
    retained = sum(len(p) for p in driver._topics["t"].partitions)
    assert retained < 300_000
    consumer.close()


def test_unknown_topic_is_a_driver_error(driver):
    with pytest.raises(DriverError, match="nope"):
        driver.create_producer("nope")


def test_unknown_config_key_is_rejected_with_the_allowed_keys():
    with pytest.raises(ConfigError) as caught:
        Driver.from_config(
            DriverSpec(name="m", kind="memory", config={"pollIntervalMS": 1}, source="m.yaml")
        )
    assert "pollIntervalMs" in str(caught.value)
