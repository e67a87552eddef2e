"""The Kafka producer on a real client with no broker behind it, through both bursts: its local
queue fills, and every message that finds it full waits for room once (from ``send``, or from
``_resend`` after the compiled burst's direct ``produce``)."""

import pytest

from loadgen.driver_api import ACK, KEY, VALUE
from loadgen.driver_api.stamp import read_prefix
from loadgen.engine.burst import burst_sender
from loadgen_drivers.kafka import driver as kafka

QUEUE = 5


@pytest.fixture
def producer():
    conf = {"bootstrap.servers": "127.0.0.1:9", "queue.buffering.max.messages": str(QUEUE)}
    made = kafka.KafkaProducer("t", conf)
    yield made
    made._producer.purge()


def test_produce_is_called_positionally_with_the_stamped_value(producer):
    send = producer.prefixed_send()
    assert send.call == producer._produce
    assert send.args == ("t", VALUE, KEY, kafka.UNASSIGNED, ACK)


@pytest.mark.usefixtures("burst_engine")
def test_a_full_queue_sends_each_refused_message_when_room_comes_or_fails_it(producer, monkeypatch):
    """No broker: the queue never drains, so each refused message waits out the (shortened)
    full-queue timeout and is failed through its own ack, once, while the run goes on."""
    monkeypatch.setattr(kafka, "FULL_QUEUE_TIMEOUT_S", 0.05)
    waited = []
    wait = producer._send_when_room
    monkeypatch.setattr(
        producer,
        "_send_when_room",
        lambda key, value, *rest: (waited.append(read_prefix(value)[1]), wait(key, value, *rest)),
    )
    acks = {}

    def bind(message_id, intended_ns, sent_ns):
        return lambda error, *_: acks.setdefault(message_id, []).append(error)

    send = burst_sender([producer], [b"v" * 64], None, bind, [0], 0)
    send(0, QUEUE + 3, 0, 1.0)
    assert len(producer._producer) == QUEUE
    assert waited == [5, 6, 7]
    assert sorted(acks) == [5, 6, 7]
    assert all(len(errors) == 1 and isinstance(errors[0], BufferError) for errors in acks.values())


def test_an_error_other_than_a_full_queue_ends_the_run(producer):
    with pytest.raises(TypeError):
        producer._resend(TypeError("bad value"), None, b"v" * 64, lambda *_: None)
