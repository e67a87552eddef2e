"""loadgen's Kafka producer path beside a bare confluent-kafka loop: same settings, same run.

Usage: python bench/kafka_producer_vs_bare.py [--seconds 10] [--rounds 3] [--size 1024] [--cpu N]
       [--sides bare,loadgen,run]

Starts a local tansu, then rotates A (bare loop), B (loadgen: ProducerLoop + recorder + Kafka
driver + per-second histogram binning) and C (the whole ``loadgen run`` process tree) in fresh
subprocesses (:mod:`ab`), each sending unthrottled to a fresh 16-partition topic for
``--seconds``. Every side is broker-bound on a 2-core box, so CPU per message is the efficiency
figure; throughput ratios are reported beside it.

Every side carries what loadgen's Kafka driver carries: the 32-byte stamp in the payload's first
bytes (:mod:`loadgen.driver_api.stamp`: the mark ``lg-stamp``, send time, message id, intended send
time) and no header. Until issue #60 the bare loop sent an 8-byte ``lg-send-ns`` header instead,
which loadgen no longer carries: every figure of this script in bench/results/ was measured so.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_BYTES, PREFIX_MARK, PREFIXED

PRODUCER_SETTINGS = {"acks": "all", "linger.ms": "1", "batch.size": "131072"}
PARTITIONS = 16


def bare(bootstrap: str, topic: str, seconds: float, size: int) -> dict:
    """A tight loop a user would write, carrying what loadgen's Kafka driver carries: the 32-byte
    stamp as the payload's first bytes (send time, message id, and the send time again as the
    intended time, since nothing is scheduled), no header. A shared delivery callback, poll(0)
    after every 512 sends, and on a full queue poll(1 ms) and retry the same message."""
    from confluent_kafka import Producer

    if size < PREFIX_BYTES:
        raise ValueError(
            f"--size {size}: the bare loop needs at least {PREFIX_BYTES} bytes for the stamp "
            "(loadgen carries a shorter payload's stamp in a header, which this loop does not)"
        )
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    produce, pack, tail = producer.produce, PREFIXED.pack, bytes(size - PREFIX_BYTES)
    acked, message_id = [0], 0

    def delivered(error, message):
        if error is None:
            acked[0] += 1

    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        for _ in range(512):
            now = time.time_ns()
            value = pack(PREFIX_MARK, now, message_id, now) + tail
            message_id += 1
            while True:
                try:
                    produce(topic, value, None, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.001)
        producer.poll(0)
    producer.flush(30)
    return ab.measured(acked[0], start, cpu0)


def target(bootstrap: str, topic: str) -> tuple[DriverSpec, TopicSpec]:
    """loadgen's Kafka driver with :data:`PRODUCER_SETTINGS`, on the parent's topic."""
    config = {
        "commonConfig": f"bootstrap.servers={bootstrap}",
        "producerConfig": "\n".join(f"{k}={v}" for k, v in PRODUCER_SETTINGS.items()),
        "consumerConfig": "auto.offset.reset=earliest",
    }
    return DriverSpec(name="Kafka", kind="kafka", config=config), TopicSpec(topic, PARTITIONS)


def main() -> None:
    args = ab.parse_args(seconds=10, rounds=3)

    from confluent_kafka.admin import AdminClient, NewTopic

    from loadgen_drivers.kafka.local.tansu import start_tansu

    broker = start_tansu()
    admin = AdminClient({"bootstrap.servers": broker.address})

    def fresh_topic(topic: str) -> Callable[[], None]:
        for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            future.result(10)

        def remove() -> None:
            for future in admin.delete_topics([topic]).values():
                future.result(10)

        return remove

    try:
        rows = ab.alternate(__file__, args, fresh_topic, bootstrap=broker.address)
    finally:
        broker.stop()
    ab.print_summary(rows)


if __name__ == "__main__":
    if not ab.child_main({"bare": bare, **ab.loadgen_sides(target)}):
        main()
