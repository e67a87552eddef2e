"""Publish and end-to-end latency at a fixed rate: ``loadgen run`` beside rdkafka_performance.

Usage: python bench/kafka_latency_vs_native.py --native PATH [--rate 10000] [--seconds 30]
       [--warmup 5] [--rounds 3] [--size 1024]

PATH is librdkafka's ``examples/rdkafka_performance`` built against the confluent-kafka wheel's
librdkafka, the library loadgen's Kafka driver calls (how: bench/results/kafka.md, "Issue #43,
second part"). Starts a local tansu; each round runs both sides, in
alternating order, each on a fresh one-partition topic:

- ``native``: ``rdkafka_performance -C -l`` (a consumer from the end of the partition), then
  ``-P -l -r RATE`` (a producer; ``-l`` writes its wall clock in µs into each payload), each
  writing every message's latency (µs) to a file with ``-A``: the producer's from the
  payload's clock to the delivery report, the consumer's from it to the message's arrival;
- ``loadgen``: ``loadgen run`` with one producer and one consumer at RATE, its result JSON's
  aggregated publish and end-to-end percentiles.

Both use ``configs/drivers/kafka-local.yaml``'s client settings (acks=all, linger.ms=5,
batch.size=131072; fetch.wait.max.ms=5 for the consumer). The native side's first
``--warmup`` seconds of messages are dropped, as loadgen's warm-up is. Percentiles are
nearest-rank over every message (loadgen's come from its HdrHistograms, 3 significant digits).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from loadgen_drivers.kafka.local.tansu import start_tansu

PRODUCER = {"acks": "all", "linger.ms": "5", "batch.size": "131072"}
CONSUMER = {"fetch.wait.max.ms": "5"}
QUANTILES = (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))
RESULT_SUFFIXES = {"p50": "50pct", "p99": "99pct", "p99.9": "999pct"}
"""The result JSON's field suffix of each percentile (``aggregatedPublishLatency50pct``...)."""
CONSUMER_START_S = 3.0
"""Time the native consumer gets to join its partition before the producer starts."""


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def percentiles_ms(path: Path, skip: int) -> dict[str, float]:
    micros = [float(line) for line in path.read_text().split()][skip:]
    return {name: nearest_rank(micros, q) / 1000 for name, q in QUANTILES} | {"n": len(micros)}


def properties(pairs: dict[str, str]) -> str:
    """``pairs`` as a driver file's client properties (``key=value`` lines)."""
    return "\n".join(f"{key}={value}" for key, value in pairs.items())


def settings(pairs: dict[str, str]) -> list[str]:
    return [part for key, value in pairs.items() for part in ("-X", f"{key}={value}")]


def native(binary: str, broker: str, topic: str, args: argparse.Namespace, folder: Path) -> dict:
    count = int(args.rate * (args.seconds + args.warmup))
    common = ["-t", topic, "-p", "0", "-b", broker, "-c", str(count), "-l", "-q"]
    consumer = subprocess.Popen(
        [binary, "-C", *common, "-o", "end", "-A", str(folder / "e2e.txt"), *settings(CONSUMER)],
        stdout=subprocess.DEVNULL,
    )
    time.sleep(CONSUMER_START_S)
    started = time.perf_counter()
    subprocess.run(
        [
            *(binary, "-P", *common, "-s", str(args.size), "-r", str(args.rate), "-a", "-1"),
            *("-A", str(folder / "publish.txt"), *settings(PRODUCER)),
        ],
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=args.seconds + args.warmup + 60,
    )
    elapsed = time.perf_counter() - started
    consumer.wait(timeout=60)
    skip = int(args.rate * args.warmup)
    return {
        "rate": count / elapsed,
        "publish": percentiles_ms(folder / "publish.txt", skip),
        "e2e": percentiles_ms(folder / "e2e.txt", skip),
    }


def loadgen_run(broker: str, args: argparse.Namespace, folder: Path) -> dict:
    workload = {
        "name": "latency-vs-native",
        "topics": 1,
        "partitionsPerTopic": 1,
        "messageSize": args.size,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": args.rate,
        "consumerBacklogSizeGB": 0,
        "testDurationMinutes": 1,
        "warmupDurationMinutes": 0,
    }
    driver = {
        "name": "Kafka",
        "driver": "kafka",
        "replicationFactor": 1,
        "commonConfig": f"bootstrap.servers={broker}",
        "producerConfig": properties(PRODUCER),
        "consumerConfig": properties(
            {"auto.offset.reset": "earliest", "enable.auto.commit": "false", **CONSUMER}
        ),
    }
    (folder / "workload.yaml").write_text(yaml.safe_dump(workload))
    (folder / "driver.yaml").write_text(yaml.safe_dump(driver))
    out = folder / "results"
    subprocess.run(
        [
            *("loadgen", "run", str(folder / "workload.yaml"), "-d", str(folder / "driver.yaml")),
            *("--duration", f"{args.seconds}s", "--warmup", f"{args.warmup}s"),
            *("-o", str(out), "-q", "--no-report"),
        ],
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=args.seconds + args.warmup + 120,
    )
    [path] = out.glob("*.json")
    result = json.loads(path.read_text())
    latency = {
        side: {
            name: result[f"aggregated{prefix}Latency{suffix}"]
            for name, suffix in RESULT_SUFFIXES.items()
        }
        for side, prefix in (("publish", "Publish"), ("e2e", "EndToEnd"))
    }
    rates = result["publishRate"]
    return {"rate": statistics.mean(rates) if rates else 0.0, **latency}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--native", required=True, help="rdkafka_performance")
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    broker = start_tansu()
    admin = AdminClient({"bootstrap.servers": broker.address})
    rows: dict[str, list[dict]] = {"native": [], "loadgen": []}
    try:
        for round_number in range(args.rounds):
            order = ["native", "loadgen"] if round_number % 2 == 0 else ["loadgen", "native"]
            for side in order:
                with tempfile.TemporaryDirectory() as scratch:
                    folder = Path(scratch)
                    if side == "native":
                        topic = f"native-{uuid.uuid4().hex[:8]}"
                        for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
                            future.result(10)
                        row = native(args.native, broker.address, topic, args, folder)
                        admin.delete_topics([topic])
                    else:
                        row = loadgen_run(broker.address, args, folder)
                rows[side].append(row)
                print(round_number + 1, side, json.dumps(row), flush=True)
    finally:
        broker.stop()
    print("\nmedians (ms):")
    medians = {}
    for side, results in rows.items():
        medians[side] = {
            kind: {name: statistics.median(r[kind][name] for r in results) for name, _ in QUANTILES}
            for kind in ("publish", "e2e")
        }
        rate = statistics.median(r["rate"] for r in results)
        print(f"{side:8} rate {rate:9.0f}", json.dumps(medians[side]))
    print("\nloadgen / native:")
    for kind in ("publish", "e2e"):
        ratios = {
            name: round(medians["loadgen"][kind][name] / medians["native"][kind][name], 2)
            for name, _ in QUANTILES
        }
        print(f"{kind:8}", json.dumps(ratios))


if __name__ == "__main__":
    main()
