"""loadgen beside Apache Kafka's own perf tools, on the same Apache Kafka broker in one run.

Three comparisons, each side on a fresh 16-partition topic, alternating which goes first:

- max rate, producing only: ``kafka-producer-perf-test`` (``ProducerPerformance --throughput
  -1``, ``--max-records``) against ``loadgen run`` with no subscription and an unreachable rate
  for ``--seconds``; msg/s and client CPU per message (user + system of the whole process tree,
  the JVM's or loadgen's);
- publish latency at ``--rate`` msg/s: ``ProducerPerformance --throughput RATE`` against
  ``loadgen run`` at that rate (p50/p99/p99.9 of the acknowledgement);
- end-to-end latency one message at a time: ``EndToEndLatency`` (send, wait for it to be
  read, send the next; it reports whole milliseconds, so its average says more than its
  percentiles) against ``loadgen run`` with ``producerMaxInFlight: 1``.

msg/s is the mean of loadgen's per-interval publish rates, and ProducerPerformance's own
figure; CPU per message divides by every message the side sent (JVM start-up included).

Both sides use ``acks=all``, ``linger.ms=1``, ``batch.size=131072`` and 1 KiB records. The
broker is ``loadgen brokers up kafka --upstream``'s one node, started here.

    python bench/kafka_vs_perf_tools.py --rounds 3 --seconds 15 --rate 10000
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from loadgen.driver_api.local.java import java_binary
from loadgen.local_brokers import launcher
from loadgen_drivers.kafka.local.distribution import kafka_distribution

SETTINGS = {"acks": "all", "linger.ms": "1", "batch.size": "131072"}
SIZE = 1024
PARTITIONS = 16
TOOL_SUMMARY = re.compile(
    r"(?P<sent>\d+) records sent, (?P<rate>[\d.]+) records/sec .*?"
    r"(?P<p50>\d+) ms 50th, \d+ ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99\.9th"
)
E2E_AVERAGE = re.compile(r"Avg latency: (?P<avg>[\d.]+) ms")
E2E_PERCENTILES = re.compile(
    r"Percentiles: 50th = (?P<p50>[\d.]+), 99th = (?P<p99>[\d.]+), 99\.9th = (?P<p999>[\d.]+)"
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measured(command: list[str], timeout_s: float) -> tuple[str, float, float]:
    """Run ``command`` to its end: its output, wall seconds and CPU seconds (its whole tree)."""
    cpu, start = children_cpu(), time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise SystemExit(f"{command[:4]} failed: {done.stderr[-2000:]}")
    return done.stdout + done.stderr, time.monotonic() - start, children_cpu() - cpu


class Bench:
    def __init__(self, bootstrap: str, folder: Path) -> None:
        self.bootstrap = bootstrap
        self.folder = folder
        self.java = str(java_binary("kafka"))
        self.classpath = kafka_distribution().classpath_text
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.driver = folder / "driver.yaml"
        self.driver.write_text(yaml.safe_dump({
            "name": "Kafka", "driver": "kafka", "replicationFactor": 1,
            "commonConfig": f"bootstrap.servers={bootstrap}",
            "producerConfig": "\n".join(f"{k}={v}" for k, v in SETTINGS.items()),
            "consumerConfig": "auto.offset.reset=earliest\nenable.auto.commit=false",
        }))  # fmt: skip

    def topic(self) -> str:
        name = f"perf-{uuid.uuid4().hex[:8]}"
        for future in self.admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
            future.result(30)
        return name

    def tool(self, main: str, *arguments: str, timeout_s: float = 300) -> tuple[str, float, float]:
        return measured([self.java, "-Xmx512m", "-cp", self.classpath, main, *arguments], timeout_s)

    def producer_perf(self, records: int, throughput: int) -> dict[str, float]:
        output, wall, cpu = self.tool(
            "org.apache.kafka.tools.ProducerPerformance", "--topic", self.topic(),
            "--num-records", str(records), "--record-size", str(SIZE),
            "--throughput", str(throughput), "--producer-props",
            f"bootstrap.servers={self.bootstrap}", *(f"{k}={v}" for k, v in SETTINGS.items()),
        )  # fmt: skip
        summary = TOOL_SUMMARY.search(output)
        if summary is None:
            raise SystemExit(f"no summary in ProducerPerformance's output: {output[-1000:]}")
        return {
            "msg/s": float(summary["rate"]),
            "cpu us/msg": cpu / int(summary["sent"]) * 1e6,
            "pub p50": float(summary["p50"]), "pub p99": float(summary["p99"]),
            "pub p99.9": float(summary["p999"]), "wall s": wall,
        }  # fmt: skip

    def end_to_end(self, records: int) -> dict[str, float]:
        output, _, _ = self.tool(
            "org.apache.kafka.tools.EndToEndLatency", self.bootstrap, self.topic(),
            str(records), "all", str(SIZE),
        )  # fmt: skip
        found, average = E2E_PERCENTILES.search(output), E2E_AVERAGE.search(output)
        if found is None or average is None:
            raise SystemExit(f"no latencies in EndToEndLatency's output: {output[-1000:]}")
        return {"e2e avg": float(average["avg"]), "e2e p50": float(found["p50"]),
                "e2e p99": float(found["p99"]), "e2e p99.9": float(found["p999"])}  # fmt: skip

    def loadgen(self, seconds: float, **workload: object) -> dict[str, float]:
        fields = {
            "name": "perf", "topics": 1, "partitionsPerTopic": PARTITIONS, "messageSize": SIZE,
            "producersPerTopic": 1, "subscriptionsPerTopic": 1, "consumerPerSubscription": 1,
            "testDurationMinutes": 1, "producerRate": 10_000_000, **workload,
        }  # fmt: skip
        path = self.folder / "workload.yaml"
        path.write_text(yaml.safe_dump(fields))
        out = self.folder / uuid.uuid4().hex[:8]
        _, wall, cpu = measured(
            [sys.executable, "-m", "loadgen", "run", "-d", str(self.driver), str(path),
             "--warmup", "0", "--duration", f"{seconds}s", "--stats-interval", "5s",
             "-o", str(out), "--no-report"], timeout_s=seconds + 180,
        )  # fmt: skip
        [result_path] = out.glob("*.json")
        result = json.loads(result_path.read_text())
        sent = result["totalMessagesSent"]
        return {
            "msg/s": statistics.mean(result["publishRate"]), "cpu us/msg": cpu / sent * 1e6,
            "pub p50": result["aggregatedPublishLatency50pct"],
            "pub p99": result["aggregatedPublishLatency99pct"],
            "pub p99.9": result["aggregatedPublishLatency999pct"],
            "e2e p50": result["aggregatedEndToEndLatency50pct"],
            "e2e p99": result["aggregatedEndToEndLatency99pct"],
            "e2e p99.9": result["aggregatedEndToEndLatency999pct"],
            "e2e avg": result["aggregatedEndToEndLatencyAvg"], "wall s": wall,
        }  # fmt: skip


def medians(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(row[key] for row in rows), 3) for key in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--sync-messages", type=int, default=5_000)
    parser.add_argument("--max-records", type=int, default=1_500_000,
                        help="ProducerPerformance's records at max rate")  # fmt: skip
    args = parser.parse_args()
    broker = launcher.start("kafka", upstream=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(broker.address, Path(folder))
            rows: dict[str, list[dict[str, float]]] = {}
            sides = {
                "max: ProducerPerformance": lambda: bench.producer_perf(args.max_records, -1),
                "max: loadgen": lambda: bench.loadgen(args.seconds, subscriptionsPerTopic=0),
                f"{args.rate}: ProducerPerformance": lambda: bench.producer_perf(
                    int(args.rate * args.seconds), args.rate),
                f"{args.rate}: loadgen": lambda: bench.loadgen(args.seconds,
                                                              producerRate=args.rate),
                "one at a time: EndToEndLatency": lambda: bench.end_to_end(args.sync_messages),
                "one at a time: loadgen": lambda: bench.loadgen(
                    args.seconds, producerMaxInFlight=1),
            }  # fmt: skip
            names = list(sides)
            for round_number in range(args.rounds):
                for pair in range(0, len(names), 2):
                    order = names[pair : pair + 2]
                    for name in order if round_number % 2 == 0 else order[::-1]:
                        row = sides[name]()
                        rows.setdefault(name, []).append(row)
                        print(round_number, name, {k: round(v, 3) for k, v in row.items()},
                              flush=True)  # fmt: skip
            for name in names:
                print("median", name, medians(rows[name]))
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
