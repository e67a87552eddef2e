"""What carrying loadgen's stamp costs the Pulsar client: a property, or the payload's prefix.

Usage: python bench/pulsar_stamp_carriers.py [--seconds 2] [--rounds 15] [--cpu 1]

Starts pulsar-lite (16 partitions per topic, 127.0.0.1) and, in this one process pinned to
``--cpu``, sends 1 KiB messages unthrottled through the client's native ``send_async`` (the
driver's path: ``MessageBuilder``, one shared callback that counts acks), with each carrier in
turn, round after round, a fresh producer and topic per run. Same client settings as
``pulsar_producer_vs_bare.py``. Short runs alternating inside one process keep the host's
drift out of the comparison better than separate processes do. Prints the process's CPU time
(all threads, the client's I/O thread included) per acknowledged message, medians per carrier.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from binascii import b2a_base64
from collections.abc import Callable

import pulsar

from ab import cpu_seconds
from loadgen.base.cpus import pin, usable_cpus
from loadgen.driver_api import STAMP
from loadgen.driver_api.stamp import PREFIX_MARK, PREFIXED
from loadgen_drivers.pulsar.stamp import STAMP_PROPERTY
from pulsar_producer_vs_bare import bare_producer

MessageBuilder = pulsar._pulsar.MessageBuilder
Build = Callable[[bytes, int, int], object]


def no_stamp(payload: bytes, _now: int, _index: int) -> object:
    return MessageBuilder().content(payload).build()


def send_time_property(payload: bytes, now: int, _index: int) -> object:
    """What the bare loop of pulsar_producer_vs_bare.py carries: the send time, 19 digits."""
    return MessageBuilder().content(payload).property("lg-send-ns", str(now)).build()


def stamp_property(payload: bytes, now: int, index: int) -> object:
    stamp = b2a_base64(STAMP.pack(now, index, now), newline=False).decode()
    return MessageBuilder().content(payload).property(STAMP_PROPERTY, stamp).build()


def payload_prefix(payload: bytes, now: int, index: int) -> object:
    stamped = PREFIXED.pack(PREFIX_MARK, now, index, now) + payload[PREFIXED.size :]
    return MessageBuilder().content(stamped).build()


CARRIERS: dict[str, Build] = {
    "no stamp": no_stamp,
    "send time property (19 chars)": send_time_property,
    "lg-stamp property (32 chars)": stamp_property,
    "payload prefix (32 bytes)": payload_prefix,
}


def run(client: pulsar.Client, build: Build, seconds: float) -> float:
    """CPU µs per acknowledged message of ``seconds`` of unthrottled sending."""
    producer = bare_producer(client, f"carrier-{uuid.uuid4().hex[:8]}")
    send_async = producer._producer.send_async
    ok = pulsar.Result.Ok.value
    acked = [0]

    def on_sent(result: pulsar.Result, _message_id: object) -> None:
        acked[0] += result.value == ok

    payload = bytes(1024)
    sent = 0
    cpu0, deadline = cpu_seconds(), time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for index in range(sent, sent + 512):
            send_async(build(payload, time.time_ns(), index), on_sent)
        sent += 512
    producer.flush()
    cpu = cpu_seconds() - cpu0
    producer.close()
    return cpu / max(acked[0], 1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cpu", type=int, default=1)
    options = parser.parse_args()
    from loadgen_drivers.pulsar.local.lite import start_pulsar_lite

    broker = start_pulsar_lite(default_partitions=16)
    try:
        pin(usable_cpus(str(options.cpu)))
        client = pulsar.Client(
            broker.driver_config["client"]["serviceUrl"],
            io_threads=1,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
        )
        run(client, no_stamp, 1.0)  # warm the connection and the partitions' producers
        costs: dict[str, list[float]] = {name: [] for name in CARRIERS}
        for round_number in range(1, options.rounds + 1):
            for name, build in CARRIERS.items():
                costs[name].append(run(client, build, options.seconds))
            print(f"round {round_number}: " + ", ".join(f"{c[-1]:.2f}" for c in costs.values()))
        client.close()
    finally:
        broker.stop()
    base = statistics.median(costs["no stamp"])
    for name, values in costs.items():
        median = statistics.median(values)
        print(f"{name:32} {median:6.2f} µs CPU/msg  ({median / base:.3f} of no stamp)")


if __name__ == "__main__":
    main()
