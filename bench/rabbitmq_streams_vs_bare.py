"""loadgen's RabbitMQ Streams producer path beside a bare rstream publisher, same run.

Usage: python bench/rabbitmq_streams_vs_bare.py [--seconds 5] [--rounds 3] [--size 1024]
       [--cpu N] [--sides bare,loadgen,run]

Starts a local RabbitMQ with the stream plugin, then rotates A (bare: rstream's own
``Producer.send_batch`` with a confirm callback), B (loadgen: ProducerLoop + recorder + the
driver) and C (the whole ``loadgen run`` process tree) in fresh subprocesses (:mod:`ab`). Same
settings on every side: one stream, at most 10,000 unconfirmed messages, no sub-entries, 1 KiB
payloads each carrying its send time, unthrottled for ``--seconds``. Each side gets a fresh
stream, deleted after it.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec

WINDOW = 10_000
BATCH = 512
"""Messages per ``send_batch``: the producer loop's burst."""
SEND_TIME = struct.Struct(">q")


def bare(uri: str, topic: str, seconds: float, size: int) -> dict:
    """The publisher a careful user writes from rstream's docs: ``send_batch`` with an
    ``on_publish_confirm`` callback, a window of 10,000 unconfirmed messages, each payload
    stamped with its send time."""
    from rstream import Producer

    from loadgen_drivers.rabbitmq_streams.config import endpoint

    where = endpoint(uri)
    stream = f"{topic}-0"
    tail = bytes(size - SEND_TIME.size)
    state = {"acked": 0, "in_flight": 0}

    async def publish() -> dict:
        room = asyncio.Event()

        def confirmed(status) -> None:
            state["acked"] += 1
            state["in_flight"] -= 1
            if state["in_flight"] < WINDOW - BATCH:
                room.set()

        async with Producer(
            where.host, where.port, username=where.username, password=where.password
        ) as producer:
            cpu0, start = ab.cpu_seconds(), time.perf_counter()
            while time.perf_counter() - start < seconds:
                if state["in_flight"] > WINDOW - BATCH:
                    room.clear()
                    await room.wait()
                batch = [SEND_TIME.pack(time.time_ns()) + tail for _ in range(BATCH)]
                state["in_flight"] += BATCH
                await producer.send_batch(stream, batch, on_publish_confirm=confirmed)
            while state["in_flight"] > 0 and time.perf_counter() - start < seconds + 30:
                await asyncio.sleep(0.001)
            return ab.measured(state["acked"], start, cpu0)

    return asyncio.run(publish())


def target(uri: str, topic: str) -> tuple[DriverSpec, TopicSpec]:
    """loadgen's driver with the bare publisher's window, on the parent's stream."""
    config = {"uris": [uri], "maxUnconfirmedMessages": WINDOW}
    return DriverSpec(name="RabbitMQ Streams", kind="rabbitmq-streams", config=config), TopicSpec(
        topic, 1
    )


def main() -> None:
    args = ab.parse_args(seconds=5, rounds=3)

    from loadgen.driver_api import open_driver
    from loadgen_drivers.rabbitmq_streams.local.server import start_rabbitmq_streams

    broker = start_rabbitmq_streams()
    uri = broker.driver_config["uris"][0]

    def fresh_topic(topic: str) -> Callable[[], None]:
        spec, made = target(uri, topic)
        driver = open_driver(spec)
        driver.create_topics([made])

        def remove() -> None:
            driver.delete_topics([topic])
            driver.close()

        return remove

    try:
        rows = ab.alternate(__file__, args, fresh_topic, uri=uri)
    finally:
        broker.stop()
    ab.print_summary(rows)


if __name__ == "__main__":
    if not ab.child_main({"bare": bare, **ab.loadgen_sides(target)}):
        main()
