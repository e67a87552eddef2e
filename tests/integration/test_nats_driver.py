"""The NATS JetStream driver on a real nats-server (the ``nats_broker`` fixture), what is its
own: ``Nats-Msg-Id`` dedup, and messages a paused consumer holds past the ack wait. The life
cycle every log-shaped system shares (tailing, keys, catch-up, unread, producer-only,
consumer-only, two workers) is in test_runs_nats_redis_streams.py."""

import asyncio
import time

import nats
import pytest

from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.nats import Driver
from loadgen_drivers.nats import consumer as nats_consumer
from loadgen_drivers.nats import driver as nats_driver

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nats_spec(nats_broker):
    return DriverSpec("NATS JetStream", "nats", nats_broker.driver_config, "local nats-server")


def stored_in(broker, topic: str) -> int:
    async def count():
        nc = await nats.connect(f"nats://{broker.address}")
        try:
            return (await nc.jetstream().stream_info(topic)).state.messages
        finally:
            await nc.close()

    return asyncio.run(count())


def test_with_msg_id_dedup_a_message_id_sent_twice_is_stored_once(nats_spec, nats_broker):
    config = {**nats_spec.config, "msgIdDedup": True}
    driver = Driver.from_config(DriverSpec("NATS", "nats", config, nats_spec.source))
    topic = f"dedup-{time.time_ns()}"
    try:
        driver.create_topics([TopicSpec(topic, 1)])
        producer = driver.create_producer(topic)
        outcomes = []
        for message_id in (7, 7, 8):  # the same id twice: a republish, as a retry would make
            producer.send(None, bytes(64), outcomes.append, message_id, time.time_ns())
        assert producer.flush(5.0) == 0
        producer.close()
        assert outcomes == [None, None, None]  # a duplicate is acknowledged, not refused
        assert stored_in(nats_broker, topic) == 2
    finally:
        driver.delete_topics([topic])
        driver.close()


def test_messages_held_through_a_pause_longer_than_ack_wait_arrive_once(nats_spec, monkeypatch):
    """Paused, a consumer holds what its open pull still brings; ``+WPI`` keeps the server
    from sending those again when the pause outlasts ``ack_wait`` (2 s here, 30 s in runs)."""
    monkeypatch.setattr(nats_consumer, "ACK_WAIT_S", 2.0)
    monkeypatch.setattr(nats_driver, "ACK_WAIT_S", 2.0)
    driver = Driver.from_config(nats_spec)
    topic = f"held-{time.time_ns()}"
    received = []
    try:
        driver.create_topics([TopicSpec(topic, 2)])
        consumer = driver.create_consumer(topic, "sub", lambda *m: received.append(m[2]))
        producer = driver.create_producer(topic)
        consumer.pause()
        for message_id in range(50):  # into the pull that was open when the pause came
            producer.send(None, bytes(64), lambda *_: None, message_id, time.time_ns())
        assert producer.flush(5.0) == 0
        time.sleep(5.0)  # two and a half ack waits
        assert received == []
        consumer.resume()
        deadline = time.monotonic() + 10
        while len(received) < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a redelivery would come now
        assert sorted(received) == list(range(50))
        producer.close()
        consumer.close()
    finally:
        driver.delete_topics([topic])
        driver.close()
