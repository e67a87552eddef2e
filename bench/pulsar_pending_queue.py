"""How many messages pulsar-client holds, and for how long, when a producer outruns Apache Pulsar:
``pendingQueueSize: 0`` (OMB's pulsar.yaml) against a bound.

A bare pulsar-client producer on a fresh 16-partition topic of ``brokers up pulsar
--upstream``'s standalone sends 1 KiB messages as fast as it can for ``--seconds`` with OMB's
batching (1 ms, 1000 messages, 1 MiB), ``block_if_queue_full`` and 50,000 pending across
partitions, once per ``--pending`` value, alternating for ``--rounds``. Prints the sends made,
the most messages awaiting acknowledgement (sampled every 1000 sends) and the publish latency
from ``send_async`` to its callback.

    python bench/pulsar_pending_queue.py --rounds 2 --seconds 10 --pending 0,1000
"""

from __future__ import annotations

import argparse
import json
import time

import pulsar

from loadgen_drivers.pulsar.admin import Admin
from loadgen_drivers.pulsar.config import ClientConfig
from loadgen_drivers.pulsar.local.upstream import start_upstream_pulsar

PAYLOAD = bytes(1024)
PARTITIONS = 16


def partitioned_topic(admin: Admin) -> str:
    topic = f"persistent://public/default/pending-{time.time_ns()}"
    admin.create_partitioned_topic(topic, PARTITIONS)
    return topic


def one_side(client: pulsar.Client, topic: str, pending: int, seconds: float) -> dict:
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_publish_delay_ms=1,
        batching_max_messages=1000, batching_max_allowed_size_in_bytes=1 << 20,
        block_if_queue_full=True, max_pending_messages=pending,
        max_pending_messages_across_partitions=50_000,
    )  # fmt: skip
    latencies_ns: list[int] = []

    def acknowledged(_result: object, _message_id: object, sent_ns: int) -> None:
        latencies_ns.append(time.perf_counter_ns() - sent_ns)

    sent = most_pending = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sent_ns = time.perf_counter_ns()
        producer.send_async(PAYLOAD, lambda r, m, sent_ns=sent_ns: acknowledged(r, m, sent_ns))
        sent += 1
        if sent % 1000 == 0:
            most_pending = max(most_pending, sent - len(latencies_ns))
    producer.flush()
    producer.close()
    latencies_ns.sort()
    return {
        "pendingQueueSize": pending,
        "sends/s": round(sent / seconds),
        "most pending": most_pending,
        "pub p50 ms": round(latencies_ns[len(latencies_ns) // 2] / 1e6, 1),
        "pub p99 ms": round(latencies_ns[int(len(latencies_ns) * 0.99)] / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--pending", default="0,1000", help="comma-separated pendingQueueSize")
    args = parser.parse_args()
    broker = start_upstream_pulsar()
    try:
        client = pulsar.Client(broker.endpoints["service URL"], io_threads=1)
        admin = Admin(ClientConfig.model_validate(broker.driver_config["client"]))
        for _ in range(args.rounds):
            for pending in (int(value) for value in args.pending.split(",")):
                topic = partitioned_topic(admin)
                print(json.dumps(one_side(client, topic, pending, args.seconds)), flush=True)
        client.close()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
