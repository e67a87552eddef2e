"""Synchronous publishing (``producerMaxInFlight: 1``) on tansu (or Apache Kafka with
``--loadgen-upstream``), pulsar-lite and RabbitMQ.

A spy around the real driver's ``send``, and around the client call its ``prefixed_send`` hands
the loop (Kafka), counts the messages handed to the client and not yet acknowledged, per
producer, at the client boundary; the window must hold there.
"""

import dataclasses
import threading

import pytest

import loadgen
from loadgen.driver_api import ACK
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.kafka import driver as kafka_driver
from loadgen_drivers.pulsar import producer as pulsar_producer
from loadgen_drivers.rabbitmq import producer as rabbitmq_producer

pytestmark = pytest.mark.integration

WORKLOAD = {
    "name": "synchronous",
    "topics": 1,
    "partitionsPerTopic": 4,
    "messageSize": 1024,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 2,
    "producerRate": 50_000,  # far more than one message in flight per producer can carry
    "producerMaxInFlight": 1,
    "testDurationMinutes": 1,
}


class InFlight:
    """Per producer object: messages sent and not yet called back, and the highest count seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.now: dict[int, int] = {}
        self.peak = 0
        self.sends = 0

    def counted(self, producer, on_done):
        """Count one more message of ``producer`` in flight until ``on_done`` is called."""
        with self.lock:
            count = self.now.get(id(producer), 0) + 1
            self.now[id(producer)] = count
            self.peak = max(self.peak, count)
            self.sends += 1

        def done(*result):
            with self.lock:  # before the engine hears of it: it may send the next at once
                self.now[id(producer)] -= 1
            on_done(*result)

        return done

    def install(self, patch, producer_class):
        original = producer_class.send
        spy = self

        def send(producer, key, payload, on_done, message_id, intended_ns):
            done = spy.counted(producer, on_done)
            original(producer, key, payload, done, message_id, intended_ns)

        patch.setattr(producer_class, "send", send)
        if hasattr(producer_class, "prefixed_send"):
            patch.setattr(producer_class, "prefixed_send", self.spied(producer_class))

    def spied(self, producer_class):
        """``prefixed_send`` whose call counts each message it hands the client."""
        original = producer_class.prefixed_send
        spy = self

        def prefixed_send(producer):
            direct = original(producer)
            at = direct.args.index(ACK)

            def call(*args):
                args = list(args)
                args[at] = spy.counted(producer, args[at])
                direct.call(*args)

            return dataclasses.replace(direct, call=call)

        return prefixed_send


def synchronous_run(spec, producer_class, monkeypatch, workload=WORKLOAD):
    spy = InFlight()
    spy.install(monkeypatch, producer_class)
    result = loadgen.run(workload, spec, duration=5, warmup=1, stats_interval=1)
    return spy, result


def check(spy, result):
    assert spy.sends > 100
    assert spy.peak == 1
    document = result.document
    accounting = (document["run"]["drain"], document["deliveryAccounting"])
    assert result.sent == result.received, accounting
    assert result.lost == 0 and result.duplicates == 0, accounting
    latency = document["aggregatedPublishLatency99pct"]
    assert 0 < document["aggregatedPublishLatency50pct"] <= latency
    # one message per producer at a time: the rate is bounded by the round trip, far below
    # the asked rate (on a fast machine RabbitMQ's confirms made 5k of 5k asked)
    rate = sum(document["publishRate"]) / len(document["publishRate"])
    median_s = document["aggregatedPublishLatency50pct"] / 1000
    assert rate < WORKLOAD["producerRate"] * 0.9
    assert rate < 2 / median_s * 1.2  # two producers, each at most one per round trip
    assert document["aggregatedPublishDelayLatency99pct"] > 100_000  # µs: behind the schedule


def test_synchronous_kafka_keeps_one_message_in_flight(kafka_spec, monkeypatch):
    # Apache Kafka runs it as written: no batching wait, two producers on the same partitions
    producer_config, workload = "acks=all\nlinger.ms=0", WORKLOAD
    if kafka_spec.source == "tansu":
        # a short batching wait: each message waits linger.ms alone. Not 0: tansu then lost 1-2
        # of ~13k messages in 2 of 3 runs, synchronous or not (a broker defect,
        # bench/results/kafka.md)
        producer_config = "acks=all\nlinger.ms=1"
        # one producer per topic: with two producers appending one-message batches to the same
        # partitions, tansu lost 1-2 acknowledged messages of ~6k in 3 of 3 full-suite runs
        # (never alone, where the round trip is slower) and 1 of 3 at 6k msg/s with
        # linger.ms=0 (0 of 3 with one producer per topic): a tansu append race, as far as
        # this shows
        workload = WORKLOAD | {"topics": 2, "producersPerTopic": 1}
    config = {**kafka_spec.config, "producerConfig": producer_config}
    spec = dataclasses.replace(kafka_spec, config=config)
    spy, result = synchronous_run(spec, kafka_driver.KafkaProducer, monkeypatch, workload)
    check(spy, result)


def test_synchronous_pulsar_keeps_one_message_in_flight(pulsar_broker, monkeypatch):
    spec = DriverSpec("Pulsar", "pulsar", pulsar_broker.driver_config, "pulsar-lite")
    spy, result = synchronous_run(spec, pulsar_producer.PulsarProducer, monkeypatch)
    check(spy, result)


def test_synchronous_rabbitmq_keeps_one_message_in_flight(rabbitmq_spec, monkeypatch):
    spy, result = synchronous_run(rabbitmq_spec, rabbitmq_producer.RabbitProducer, monkeypatch)
    check(spy, result)
