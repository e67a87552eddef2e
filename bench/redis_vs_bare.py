"""loadgen's Redis producer path beside a bare redis-py pipeline loop and redis-benchmark, same run.

Usage: python bench/redis_vs_bare.py [--seconds 5] [--rounds 3] [--size 1024] [--depth 100]
       [--requests 300000] [--stamp-in payload|field] [--cpu N]
       [--sides bare,loadgen,run,redis-benchmark]

Starts one local redis-server (no persistence), then rotates the sides in fresh subprocesses
(:mod:`ab`), each on a fresh stream key, unthrottled:

- ``bare``: redis-py's pipeline as its docs teach (``pipeline(transaction=False)``, ``xadd``
  ``depth`` times, ``execute``), each payload's first 8 bytes the send time, for ``--seconds``;
- ``loadgen``: the worker's producer loop + recorder + Redis driver (``pipelineDepth`` =
  ``depth``, ``stampIn`` = ``--stamp-in``) + per-second binning, for ``--seconds``;
- ``run``: the whole ``loadgen run`` process tree, producer-only, for ``--seconds``;
- ``redis-benchmark``: ``redis-benchmark -c 1 -P depth -n requests XADD key * payload
  <size bytes>``: its own throughput (its ``rps``), its CPU from the process (getrusage of the
  child).

Every side: one connection, one stream key, ``size``-byte payloads in a ``payload`` field.
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import time

import redis

import ab
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec

SIDES = ("bare", "loadgen", "run", "redis-benchmark")


def bare(host: str, port: int, topic: str, seconds: float, size: int, depth: int) -> dict:
    client = redis.Redis(host, port, protocol=2)
    pipe = client.pipeline(transaction=False)
    tail = bytes(size)[8:]
    acked = 0
    cpu0, start = ab.cpu_seconds(), time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(depth):
            pipe.xadd(topic, {b"payload": time.time_ns().to_bytes(8, "big") + tail})
        acked += len(pipe.execute())
    result = ab.measured(acked, start, cpu0)
    client.close()
    return result


def benchmark(host: str, port: int, topic: str, seconds: float, size: int, depth: int,
              requests: int, stamp_in: str) -> dict:  # fmt: skip
    """redis-benchmark in a child process; its rps, its CPU (our children's rusage)."""
    command = [
        "redis-benchmark", "-h", host, "-p", str(port), "-c", "1", "-P", str(depth),
        "-n", str(requests), "--csv", "XADD", topic, "*", "payload", "x" * size,
    ]  # fmt: skip
    cpu0, start = ab.children_cpu_seconds(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    cpu = ab.children_cpu_seconds() - cpu0
    [row] = [r for r in csv.DictReader(io.StringIO(done.stdout)) if r.get("rps")]
    rps = float(row["rps"])
    return {"acked": requests, "seconds": requests / rps, "cpu": cpu, "wall": wall,
            "gc": 0.0, "collections": 0, "collected": 0}  # fmt: skip


def target(
    host: str, port: int, topic: str, depth: int, requests: int, stamp_in: str
) -> tuple[DriverSpec, TopicSpec]:
    config = {"redisHost": host, "redisPort": port, "pipelineDepth": depth, "stampIn": stamp_in}
    return DriverSpec(name="Redis Streams", kind="redis", config=config), TopicSpec(topic, 1)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--requests", type=int, default=300_000)
    parser.add_argument("--stamp-in", choices=("payload", "field"), default="payload")
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--sides", type=lambda text: tuple(text.split(",")), default=SIDES)
    args = parser.parse_args()
    if set(args.sides) - set(SIDES):
        parser.error(f"--sides: out of {', '.join(SIDES)}")
    return args


def main() -> None:
    args = parse_args()
    from loadgen_drivers.redis.local.server import start_redis

    broker = start_redis()
    host, port = broker.address.rsplit(":", 1)
    client = redis.Redis(host, int(port))

    def fresh_topic(topic: str):
        return lambda: client.delete(topic)

    try:
        rows = ab.alternate(
            __file__, args, fresh_topic, host=host, port=int(port), depth=args.depth,
            requests=args.requests, stamp_in=args.stamp_in,
        )  # fmt: skip
    finally:
        client.close()
        broker.stop()
    ab.print_summary(rows)


def _bare(requests: int, stamp_in: str, **kwargs) -> dict:
    return bare(**kwargs)


if __name__ == "__main__":
    sides = {name: ab.loadgen_sides(target)[name] for name in ("loadgen", "run")}
    if not ab.child_main({"bare": _bare, "redis-benchmark": benchmark, **sides}):
        main()
