"""loadgen's NATS JetStream producer path beside a bare nats-py publish_async loop and
``nats bench``, same run.

Usage: python bench/nats_vs_bare.py [--seconds 5] [--rounds 3] [--size 1024] [--window 1000]
       [--messages 500000] [--nats PATH] [--cpu N] [--sides bare,bare-inbox,loadgen,run,nats-bench]

Starts one local nats-server (JetStream, file storage), then rotates the sides in fresh
subprocesses (:mod:`ab`), each on a fresh stream (subjects ``<stream>.*``), unthrottled:

- ``bare``: nats-py's ``js.publish_async`` as its docs teach, with
  ``publish_async_max_pending=window``, each payload's first 8 bytes the send time, a done
  callback per PubAck future counting the acks, 16 subjects round-robin, for ``--seconds``;
- ``bare-inbox``: the cheapest nats-py publisher: ``nc.publish`` with a reply subject per
  message on an inbox of its own, PubAcks counted on one wildcard subscription, at most
  ``window`` unacknowledged (what loadgen's driver does, without loadgen);
- ``loadgen``: the worker's producer loop + recorder + NATS driver (``maxPending`` = window) +
  per-second binning, 16 partitions (subjects) round-robin, for ``--seconds``;
- ``run``: the whole ``loadgen run`` process tree, producer-only, for ``--seconds``;
- ``nats-bench``: ``nats bench js pub async --batch window --msgs messages`` (the nats CLI,
  Go, built with ``go install github.com/nats-io/natscli/nats@v0.5.0``), one subject: its own
  rate (its CSV's MsgsPerSec), its CPU from the process (getrusage of the child). Left out
  when no ``nats`` binary is found (``--nats``, else PATH, else /tmp/natscli/nats).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nats
from nats.js.api import StreamConfig

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.nats.naming import stream_filter, subjects

SIDES = ("bare", "bare-inbox", "loadgen", "run", "nats-bench")
PARTITIONS = 16
BUILT_CLI = Path("/tmp/natscli/nats")


def bare(url: str, topic: str, seconds: float, size: int, window: int, **_: object) -> dict:
    return asyncio.run(_bare(url, topic, seconds, size, window))


async def _bare(url: str, topic: str, seconds: float, size: int, window: int) -> dict:
    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=window)
    names = subjects(topic, PARTITIONS)
    tail = bytes(size)[8:]
    acked = 0

    def on_ack(future: asyncio.Future) -> None:
        nonlocal acked
        if not future.cancelled() and future.exception() is None:
            acked += 1

    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    sent = 0
    while time.perf_counter() - start < seconds:
        payload = time.time_ns().to_bytes(8, "big") + tail
        future = await js.publish_async(names[sent % PARTITIONS], payload)
        future.add_done_callback(on_ack)
        sent += 1
    await js.publish_async_completed()
    result = ab.measured(acked, start, cpu0)
    await nc.close()
    return result


def bare_inbox(url: str, topic: str, seconds: float, size: int, window: int, **_: object) -> dict:
    return asyncio.run(_bare_inbox(url, topic, seconds, size, window))


async def _bare_inbox(url: str, topic: str, seconds: float, size: int, window: int) -> dict:
    """The cheapest JetStream publisher nats-py allows: ``nc.publish`` with a reply subject of
    its own per message, PubAcks counted on one wildcard subscription (no future per message),
    the window kept by waiting when it is full."""
    nc = await nats.connect(url)
    prefix = nc.new_inbox() + "."
    names = subjects(topic, PARTITIONS)
    tail = bytes(size)[8:]
    counts = {"sent": 0, "acked": 0}
    room = asyncio.Event()

    async def on_ack(_msg) -> None:
        counts["acked"] += 1
        if counts["sent"] - counts["acked"] < window:
            room.set()

    await nc.subscribe(prefix + "*", cb=on_ack)
    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    sent = 0
    while time.perf_counter() - start < seconds:
        if sent - counts["acked"] >= window:
            room.clear()
            await room.wait()
        payload = time.time_ns().to_bytes(8, "big") + tail
        await nc.publish(names[sent % PARTITIONS], payload, prefix + str(sent))
        sent += 1
        counts["sent"] = sent
    while counts["acked"] < sent:
        room.clear()
        await asyncio.wait_for(room.wait(), 10)
    result = ab.measured(counts["acked"], start, cpu0)
    await nc.close()
    return result


def nats_bench(
    url: str, topic: str, seconds: float, size: int, window: int, messages: int, cli: str
) -> dict:
    """``nats bench`` in a child process; its own rate, its CPU (our children's rusage)."""
    with tempfile.TemporaryDirectory(prefix="nats-bench-") as scratch:
        report = Path(scratch) / "bench.csv"
        command = [
            cli, "bench", "js", "pub", "async", "-s", url, "--stream", topic,
            "--msgs", str(messages), "--size", str(size), "--batch", str(window),
            "--no-progress", "--csv", str(report), subjects(topic, 1)[0],
        ]  # fmt: skip
        cpu0, start = ab.children_cpu_seconds(), time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        wall = time.perf_counter() - start
        cpu = ab.children_cpu_seconds() - cpu0
        [row] = list(csv.DictReader(report.open()))
    rate = float(row["MsgsPerSec"])
    return {"acked": messages, "seconds": messages / rate, "cpu": cpu, "wall": wall,
            "gc": 0.0, "collections": 0, "collected": 0}  # fmt: skip


def target(url: str, topic: str, window: int, **_: object) -> tuple[DriverSpec, TopicSpec]:
    config = {"natsHostUrl": url, "replicationFactor": 1, "maxPending": window}
    return DriverSpec(name="NATS JetStream", kind="nats", config=config), TopicSpec(
        topic, PARTITIONS
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--nats", default=None, help="the nats CLI binary")
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--sides", type=lambda text: tuple(text.split(",")), default=SIDES)
    args = parser.parse_args()
    if set(args.sides) - set(SIDES):
        parser.error(f"--sides: out of {', '.join(SIDES)}")
    args.nats = args.nats or shutil.which("nats") or (str(BUILT_CLI) if BUILT_CLI.exists() else "")
    if not args.nats and "nats-bench" in args.sides:
        print("no nats CLI found: the nats-bench side is left out")
        args.sides = tuple(side for side in args.sides if side != "nats-bench")
    return args


async def _admin(url: str, topic: str, create: bool) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        if create:
            await js.add_stream(StreamConfig(name=topic, subjects=[stream_filter(topic)]))
        else:
            await js.delete_stream(topic)
    finally:
        await nc.close()


def main() -> None:
    args = parse_args()
    from loadgen_drivers.nats.local.server import start_nats

    broker = start_nats()
    url = broker.driver_config["natsHostUrl"]

    def fresh_topic(topic: str):
        asyncio.run(_admin(url, topic, create=True))
        return lambda: asyncio.run(_admin(url, topic, create=False))

    try:
        rows = ab.alternate(
            __file__, args, fresh_topic, url=url, window=args.window, messages=args.messages,
            cli=args.nats,
        )  # fmt: skip
    finally:
        broker.stop()
    ab.print_summary(rows)


if __name__ == "__main__":
    sides = {name: ab.loadgen_sides(target)[name] for name in ("loadgen", "run")}
    if not ab.child_main(
        {"bare": bare, "bare-inbox": bare_inbox, "nats-bench": nats_bench, **sides}
    ):
        main()
