import threading
import time

import pytest

from loadgen.base.errors import ConfigError, DriverError
from loadgen.driver_api import KEY, NO_MESSAGE_ID, VALUE, TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_MARK, pack_prefixed, read_prefix
from loadgen_drivers.memory import Driver


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


def faulty(**faults):
    memory = Driver.from_config(DriverSpec(name="mem", kind="memory", config=faults))
    memory.create_topics([TopicSpec("t", 1)])
    return memory


def deliver(memory, count, probes=0):
    """Send ``probes`` messages without id, then ``count`` with ids 0..count-1; the ids received."""
    inbox = Inbox()
    consumer = memory.create_consumer("t", "s", inbox)
    producer = memory.create_producer("t")
    acks = []
    for _ in range(probes):
        producer.send(None, b"probe", lambda error, *_: acks.append(error), NO_MESSAGE_ID, 0)
    for i in range(count):
        producer.send(None, b"x", lambda error, *_: acks.append(error), i, 0)
    producer.flush(1.0)
    time.sleep(0.05)
    consumer.close()
    memory.close()
    assert acks == [None] * (probes + count)  # every fault is invisible to the sender
    return [m for m, _, _ in inbox.deliveries if m != NO_MESSAGE_ID]


def test_drop_every_nth_acknowledges_but_never_stores_it():
    # probes carry no id and are neither counted nor dropped
    assert deliver(faulty(dropEvery=3), 10, probes=2) == [0, 1, 3, 4, 6, 7, 9]


def test_duplicate_every_nth_stores_it_twice():
    assert deliver(faulty(duplicateEvery=4), 9) == [0, 1, 2, 3, 3, 4, 5, 6, 7, 7, 8]


def test_swap_every_nth_stores_it_behind_the_next_one_and_flush_releases_the_last():
    assert deliver(faulty(swapEvery=3), 9) == [0, 1, 3, 2, 4, 6, 5, 7, 8]
    assert deliver(faulty(swapEvery=3), 6) == [0, 1, 3, 2, 4, 5]


def test_stall_blocks_the_send_after_m_messages_once():
    memory = faulty(stallMs=100, stallAfter=2)
    producer = memory.create_producer("t")
    took = []
    for i in range(4):
        start = time.monotonic()
        producer.send(None, b"x", lambda *_: None, i, 0)
        took.append(time.monotonic() - start)
    assert took[2] >= 0.1 and max(took[:2] + took[3:]) < 0.05


def test_fault_settings_are_checked():
    with pytest.raises(ConfigError) as caught:
        Driver.from_config(
            DriverSpec(name="m", kind="memory", config={"swapEvery": 1}, source="m.yaml")
        )
    assert "swapEvery" in str(caught.value) and "m.yaml" in str(caught.value)


def stamped(message_id, intended_ns, size=64):
    return pack_prefixed(PREFIX_MARK, time.time_ns(), message_id, intended_ns) + b"t" * (size - 32)


def test_a_payload_the_loop_stamped_is_stored_as_it_is_and_read_from_its_prefix(driver):
    inbox = Inbox()
    consumer = driver.create_consumer("t", "s", inbox)
    producer = driver.create_producer("t")
    send = producer.prefixed_send()
    assert send.args == (VALUE, KEY)  # no ACK: acknowledged when the store returns
    values = [stamped(i, 1000 + i) for i in range(100)]
    for i, value in enumerate(values):
        send.call(value, None if i % 2 else b"k%d" % i)
    producer.send(None, b"short", lambda *_: None, 100, 1100)  # beside it: send's entries
    producer.send(None, b"probe", lambda *_: None, NO_MESSAGE_ID, 0)
    wait_for(lambda: len(inbox.messages) == 102)
    consumer.close()
    assert sorted(m for m, _, _ in inbox.deliveries) == [NO_MESSAGE_ID, *range(101)]
    assert sorted(t for m, t, _ in inbox.deliveries if m != NO_MESSAGE_ID) == [
        1000 + i for i in range(101)
    ]
    by_payload = dict(inbox.messages)
    for value in values:
        assert by_payload[value] == read_prefix(value)[0]  # the payload as sent, its send time


def test_a_topic_without_subscriptions_keeps_no_stamped_payload(driver):
    producer = driver.create_producer("t")
    for i in range(10):
        producer.prefixed_send().call(stamped(i, 0), None)
    assert all(partition == [] for partition in driver._topics["t"].partitions)


def test_a_broker_set_to_misbehave_takes_every_message_through_send():
    assert faulty(dropEvery=3).create_producer("t").prefixed_send() is None
    assert faulty(stallMs=1, stallAfter=5).create_producer("t").prefixed_send() is None
