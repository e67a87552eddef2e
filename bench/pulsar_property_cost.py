"""What one message property costs the Pulsar client per message, by the value's length.

Usage: python bench/pulsar_property_cost.py --lengths 0 19 32 57 [--seconds 4] [--rounds 6]
       [--size 1024] [--cpu 1]

A bare send loop as lean as loadgen's driver (the client's native ``MessageBuilder``, content and
at most one property holding a constant string of ``--lengths`` characters, 0 = none; a
callback counting acknowledgements; queue full blocks), unthrottled, each length in a fresh
process on a fresh 16-partition topic, the lengths alternating round by round. CPU is the
process's own user + system time per acknowledged message. Tells whether the length of
loadgen's stamp property (32 characters) costs more than a short one would.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

import pulsar

import ab

PARTITIONS = 16
PENDING = 1000
SENDS_PER_CHECK = 512


def send(topic: str, seconds: float, size: int, length: int, url: str) -> dict:
    client = pulsar.Client(url, io_threads=1, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    producer = client.create_producer(
        f"persistent://public/default/{topic}",
        batching_enabled=True,
        batching_max_publish_delay_ms=1,
        batching_max_allowed_size_in_bytes=131072,
        batching_max_messages=2**31 - 1,
        block_if_queue_full=True,
        max_pending_messages=PENDING,
        send_timeout_millis=0,
    )
    native_send, builder = producer._producer.send_async, pulsar._pulsar.MessageBuilder
    payload, value, ok = bytes(size), "x" * length, pulsar.Result.Ok.value
    acked = [0]

    def on_sent(result: pulsar.Result, _message_id: object) -> None:
        acked[0] += result.value == ok

    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(SENDS_PER_CHECK):
            message = builder().content(payload)
            if length:
                message.property("lg-stamp", value)
            native_send(message.build(), on_sent)
    producer.flush()
    result = ab.measured(acked[0], start, cpu0)
    client.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[0, 19, 32, 57])
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--cpu", type=int, default=None, help="pin each run to this CPU")
    args = parser.parse_args()

    from loadgen.testing.pulsar import start_pulsar_lite

    broker = start_pulsar_lite(default_partitions=PARTITIONS)
    url = broker.driver_config["client"]["serviceUrl"]
    rows: dict[int, list[dict]] = {length: [] for length in args.lengths}
    try:
        for _ in range(args.rounds):
            for length in args.lengths:
                row = ab.run_side(
                    __file__,
                    "send",
                    topic=f"bench-{uuid.uuid4().hex[:8]}",
                    seconds=args.seconds,
                    size=args.size,
                    length=length,
                    url=url,
                    cpu=args.cpu,
                )
                rows[length].append(row)
    finally:
        broker.stop()
    for length, runs in rows.items():
        cpu = [row["cpu_us_per_msg"] for row in runs]
        rate = statistics.median(row["rate"] for row in runs)
        print(
            f"{length:>3} characters: {rate:>8,.0f} msg/s  CPU µs/msg median "
            f"{statistics.median(cpu):.2f}  per round {[f'{c:.2f}' for c in cpu]}",
            flush=True,
        )


if __name__ == "__main__":
    if not ab.child_main({"send": send}):
        sys.exit(main())
