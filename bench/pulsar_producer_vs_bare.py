"""loadgen's Pulsar producer path beside a bare pulsar-client send_async loop, same run.

Usage: python bench/pulsar_producer_vs_bare.py [--seconds 10] [--rounds 3] [--size 1024]
       [--saturate 1 2 3 4] [--bare-latency] [--cpu N] [--sides bare,loadgen,run]

Starts pulsar-lite (16 partitions per topic, 127.0.0.1), then rotates A (bare loop), B
(loadgen: ProducerLoop + recorder + Pulsar driver + per-second binning) and C (the whole
``loadgen run`` process tree) in fresh subprocesses (:mod:`ab`). Same settings on every side:
one client with one I/O thread, batching on (1 ms, 128 KiB), ``block_if_queue_full`` with 1000
pending messages per partition, 1 KiB, the send time as a message property, a fresh
16-partition topic per run, unthrottled for ``--seconds``. pulsar-lite has no admin REST, so the
topics stay until the broker stops.

``--cpu N`` pins every side's processes to CPU ``N`` (:mod:`ab`); the broker is not pinned.

``--saturate N...`` then runs N loadgen producer processes at once (each on its own topic) and
reports their summed rate and the broker's CPU, to show how many it takes to saturate it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from array import array
from collections.abc import Callable
from functools import partial
from time import perf_counter_ns

import psutil
import pulsar

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec

PARTITIONS = 16
PENDING = 1000
PRODUCER = {
    "batchingEnabled": True,
    "batchingMaxPublishDelayMs": 1,
    "batchingMaxBytes": 131072,
    "blockIfQueueFull": True,
    "pendingQueueSize": PENDING,
}


def bare_producer(client: pulsar.Client, topic: str) -> pulsar.Producer:
    """A producer with :data:`PRODUCER`'s settings, as the client's own arguments."""
    return client.create_producer(
        full_name(topic),
        batching_enabled=True,
        batching_max_publish_delay_ms=1,
        batching_max_allowed_size_in_bytes=131072,
        batching_max_messages=2**31 - 1,
        block_if_queue_full=True,
        max_pending_messages=PENDING,
        send_timeout_millis=0,
    )


def bare(url: str, topic: str, seconds: float, size: int, latency: bool = False) -> dict:
    """The loop pulsar-client's docs teach (:func:`bare_loop`) on a client of its own."""
    client = pulsar.Client(url, io_threads=1, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    result = bare_loop(bare_producer(client, topic), seconds, size, latency)
    client.close()
    return result


def bare_loop(producer: pulsar.Producer, seconds: float, size: int, latency: bool) -> dict:
    """send_async with a callback, queue full blocks, for ``seconds``; measured up to the flush.

    ``latency``: the same loop measuring what loadgen measures, publish latency per message,
    which takes a callback bound per message to its send time (as any latency tool needs).
    """
    payload = bytes(size)
    acked = [0]
    latencies = array("q")

    def on_sent(result: pulsar.Result, _message_id: object) -> None:
        if result == pulsar.Result.Ok:
            acked[0] += 1

    def on_sent_timed(sent_ns: int, result: pulsar.Result, _message_id: object) -> None:
        if result == pulsar.Result.Ok:
            latencies.append(perf_counter_ns() - sent_ns)

    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(512):
            properties = {"lg-send-ns": str(time.time_ns())}
            callback = partial(on_sent_timed, perf_counter_ns()) if latency else on_sent
            producer.send_async(payload, callback, properties=properties)
    producer.flush()
    return ab.measured(acked[0] + len(latencies), start, cpu0)


def target(url: str, topic: str, latency: bool = False) -> tuple[DriverSpec, TopicSpec]:
    """loadgen's sides' driver and topic; ``latency`` only selects the bare loop they are
    compared with."""
    return driver_spec(url), TopicSpec(full_name(topic), PARTITIONS)


def driver_spec(url: str) -> DriverSpec:
    """loadgen's Pulsar driver with :data:`PRODUCER`'s settings."""
    config = {"client": {"serviceUrl": url, "ioThreads": 1}, "producer": PRODUCER}
    return DriverSpec(name="Pulsar", kind="pulsar", config=config)


def full_name(topic: str) -> str:
    return f"persistent://public/default/{topic}"


def saturate(url: str, broker_pid: int, processes: int, seconds: float, size: int) -> dict:
    """``processes`` loadgen producers at once, each its own topic; their summed rate."""
    broker = psutil.Process(broker_pid)
    before = broker.cpu_times()
    started = time.perf_counter()
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child",
                "loadgen",
                json.dumps(
                    {
                        "url": url,
                        "topic": f"sat-{processes}-{i}-{time.time_ns()}",
                        "seconds": seconds,
                        "size": size,
                    }
                ),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(processes)
    ]
    rows = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    wall = time.perf_counter() - started
    after = broker.cpu_times()
    broker_cpu = (after.user + after.system - before.user - before.system) / wall
    return {
        "processes": processes,
        "total_rate": sum(row["acked"] / row["seconds"] for row in rows),
        "broker_cpu": broker_cpu,
    }


def main() -> None:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--saturate", type=int, nargs="*", default=[])
    extra.add_argument(
        "--bare-latency",
        action="store_true",
        help="compare with a bare loop that records publish latency per message",
    )
    known, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]  # the rest are ab's arguments
    args = ab.parse_args(seconds=10, rounds=3)

    from loadgen_drivers.pulsar.local.lite import start_pulsar_lite

    broker = start_pulsar_lite(default_partitions=PARTITIONS)
    url = broker.driver_config["client"]["serviceUrl"]

    def fresh_topic(_topic: str) -> Callable[[], None]:
        return lambda: None  # auto-created on first use; pulsar-lite cannot delete it

    try:
        rows = ab.alternate(__file__, args, fresh_topic, url=url, latency=known.bare_latency)
        ab.print_summary(rows)
        for processes in known.saturate:
            row = saturate(url, broker.pid, processes, args.seconds, args.size)
            print(
                f"{processes} producer processes: {row['total_rate']:,.0f} msg/s in total, "
                f"broker CPU {row['broker_cpu']:.0%}",
                flush=True,
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    if not ab.child_main({"bare": bare, **ab.loadgen_sides(target)}):
        main()
