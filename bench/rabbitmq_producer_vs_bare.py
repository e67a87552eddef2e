"""loadgen's RabbitMQ producer path beside a bare pika async-confirm publisher, same run.

Usage: python bench/rabbitmq_producer_vs_bare.py [--seconds 5] [--rounds 5] [--size 1024]
       [--cpu N] [--sides bare,loadgen,run]

Starts a local RabbitMQ, then rotates A (bare publisher), B (loadgen: ProducerLoop + recorder +
RabbitMQ driver + per-second binning) and C (the whole ``loadgen run`` process tree) in fresh
subprocesses (:mod:`ab`). Same settings on every side: one connection and channel in confirm
mode, at most 1000 unconfirmed messages, ``mandatory``, 1 KiB, a send-time header, 16 routing
keys round-robin into 16 fresh classic queues on a direct exchange, unthrottled for
``--seconds``. Queues are deleted after every run so no side publishes into a backlog another
left behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pika

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec

PARTITIONS = 16
WINDOW = 1000


def bare(uri: str, topic: str, seconds: float, size: int) -> dict:
    """The publisher a careful user writes from pika's docs: SelectConnection, confirm_delivery,
    a window of 1000 unconfirmed messages refilled from the confirm callback, tags tracked as a
    set so ``multiple`` acks settle everything up to their tag."""
    from pika.adapters.select_connection import SelectConnection

    payload = bytes(size)
    keys = [str(k) for k in range(PARTITIONS)]
    state = {"next": 1, "acked": 0, "start": 0.0, "cpu0": 0.0, "stopping": False}
    unconfirmed: set[int] = set()
    result: dict = {}

    def publish_more(channel) -> None:
        while len(unconfirmed) < WINDOW and not state["stopping"]:
            tag = state["next"]
            properties = pika.BasicProperties(headers={"lg-send-ns": time.time_ns()})
            channel.basic_publish(topic, keys[tag % PARTITIONS], payload, properties, True)
            unconfirmed.add(tag)
            state["next"] = tag + 1

    def on_confirm(frame) -> None:
        tag, acked = frame.method.delivery_tag, 0
        if frame.method.multiple:
            settled = [t for t in unconfirmed if t <= tag]
            unconfirmed.difference_update(settled)
            acked = len(settled)
        elif tag in unconfirmed:
            unconfirmed.discard(tag)
            acked = 1
        state["acked"] += acked
        if time.perf_counter() - state["start"] >= seconds:
            state["stopping"] = True
        if not state["stopping"]:
            publish_more(channel_box[0])
        elif not unconfirmed and not result:
            result.update(ab.measured(state["acked"], state["start"], state["cpu0"]))
            connection.close()

    channel_box: list = []

    def on_channel(channel) -> None:
        channel_box.append(channel)
        channel.confirm_delivery(on_confirm, callback=lambda _: start(channel))

    def start(channel) -> None:
        state["start"], state["cpu0"] = time.perf_counter(), ab.cpu_seconds()
        publish_more(channel)

    connection = SelectConnection(
        pika.URLParameters(uri),
        on_open_callback=lambda c: c.channel(on_open_callback=on_channel),
        on_close_callback=lambda *_: connection.ioloop.stop(),
    )
    connection.ioloop.start()
    return result


def target(uri: str, topic: str) -> tuple[DriverSpec, TopicSpec]:
    """loadgen's RabbitMQ driver with the bare publisher's window, on the parent's exchange."""
    config = {"amqpUris": [uri], "maxInFlight": WINDOW, "producerCreationDelay": 0}
    spec = DriverSpec(name="RabbitMQ", kind="rabbitmq", config=config)
    return spec, TopicSpec(topic, PARTITIONS)


def declare(uri: str, topic: str) -> list[str]:
    connection = pika.BlockingConnection(pika.URLParameters(uri))
    channel = connection.channel()
    channel.exchange_declare(topic, "direct", durable=True)
    queues = [f"{topic}-q{k}" for k in range(PARTITIONS)]
    for k, queue in enumerate(queues):
        channel.queue_declare(queue, durable=True)
        channel.queue_bind(queue, topic, str(k))
    connection.close()
    return queues


def remove(uri: str, topic: str, queues: list[str]) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(uri))
    channel = connection.channel()
    for queue in queues:
        channel.queue_delete(queue)
    channel.exchange_delete(topic)
    connection.close()


def main() -> None:
    args = ab.parse_args(seconds=5, rounds=5)

    from loadgen_drivers.rabbitmq.local.server import start_rabbitmq

    broker = start_rabbitmq()
    uri = broker.driver_config["amqpUris"][0]

    def fresh_topic(topic: str) -> Callable[[], None]:
        queues = declare(uri, topic)
        return lambda: remove(uri, topic, queues)

    try:
        rows = ab.alternate(__file__, args, fresh_topic, uri=uri)
    finally:
        broker.stop()
    ab.print_summary(rows)


if __name__ == "__main__":
    if not ab.child_main({"bare": bare, **ab.loadgen_sides(target)}):
        main()
