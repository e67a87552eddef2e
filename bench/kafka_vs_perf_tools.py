"""loadgen beside Apache Kafka's own perf tools, on the same Apache Kafka broker in one run.

Four comparisons, each side on a fresh 16-partition topic (the backlog's sides share one),
alternating which goes first:

- max rate, producing only: ``kafka-producer-perf-test`` (``ProducerPerformance --throughput
  -1``, ``--max-records``) against ``loadgen run`` with no subscription and an unreachable rate
  for ``--seconds``; msg/s and client CPU per message (user + system of the whole process tree,
  the JVM's or loadgen's);
- publish latency at ``--rate`` msg/s: ``ProducerPerformance --throughput RATE`` against
  ``loadgen run`` at that rate (p50/p99/p99.9 of the acknowledgement);
- end-to-end latency one message at a time: ``EndToEndLatency`` (send, wait for it to be
  read, send the next; it reports whole milliseconds, so its average says more than its
  percentiles) against ``loadgen run`` with ``producerMaxInFlight: 1``;
- max rate, consuming a backlog: one topic filled once by ``loadgen run`` producing only
  (``--backlog`` messages at ``--fill-rate``), then read whole by each side with a group of its
  own: ``kafka-consumer-perf-test`` (``ConsumerPerformance --num-records N``) against a
  consumer-only ``loadgen run`` (``producersPerTopic: 0``, ``--existing-topics``) of
  ``--consume-seconds`` that must read all N before its last interval.

msg/s is the mean of loadgen's per-interval publish rates, and ProducerPerformance's own
figure; CPU per message divides by every message the side sent (JVM start-up included).
Reading the backlog, msg/s is ConsumerPerformance's ``nMsg.sec`` (from its subscribe, the group
join included; ``fetch.nMsg.sec``, without the join, is kept as ``fetch msg/s``) and the mean of
loadgen's 1-s consume rates up to its last, partial interval (the first holds the join); CPU
per message divides by all N, and the start-up is also taken out: the JVM's as the CPU of a
``ConsumerPerformance --version`` run just before, loadgen's as its tree's CPU outside the
measured phase (its result's ``clientCpu``).

Both sides use ``acks=all``, ``linger.ms=1``, ``batch.size=131072`` and 1 KiB records. The
broker is ``loadgen brokers up kafka --upstream``'s one node, started here.

    python bench/kafka_vs_perf_tools.py --rounds 3 --seconds 15 --rate 10000 --backlog 3000000
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
from confluent_kafka import Consumer, TopicPartition
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
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"
CONSUMER_SUMMARY = re.compile(  # start.time, end.time, MB, MB.sec, nMsg, nMsg.sec, rebalance ms,
    # fetch ms, fetch.MB.sec, fetch.nMsg.sec: the line under its header
    r"^[^,\n]+, [^,\n]+, [\d.]+, [\d.]+, (?P<read>\d+), (?P<rate>[\d.]+), (?P<join>\d+), "
    r"-?\d+, [^,\n]+, (?P<fetch_rate>[\d.]+)$",
    re.MULTILINE,
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

    def held(self, topic: str) -> int:
        """How many messages ``topic`` holds: its partitions' high less low watermarks."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "perf-watermarks"})
        try:
            marks = [
                consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
                for partition in range(PARTITIONS)
            ]
        finally:
            consumer.close()
        return sum(high - low for low, high in marks)

    def fill(self, records: int, rate: int) -> tuple[str, int]:
        """A topic filled by ``loadgen run`` producing ``records`` messages at ``rate``: its name
        and how many it holds (loadgen's stamp in each, so loadgen's consumer does its whole
        per-message work on them)."""
        topic = self.topic()
        self.run_loadgen(
            records / rate, ("--existing-topics", topic), subscriptionsPerTopic=0, producerRate=rate
        )
        return topic, self.held(topic)

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

    def consumer_perf(self, topic: str, records: int) -> dict[str, float]:
        _, _, start_cpu = self.tool(CONSUMER_PERFORMANCE, "--version", timeout_s=60)
        output, wall, cpu = self.tool(
            CONSUMER_PERFORMANCE, "--bootstrap-server", self.bootstrap, "--topic", topic,
            "--num-records", str(records), "--group", f"perf-{uuid.uuid4().hex[:8]}",
            "--timeout", "30000",
        )  # fmt: skip
        summary = CONSUMER_SUMMARY.search(output)
        if summary is None or int(summary["read"]) < records:
            raise SystemExit(f"ConsumerPerformance did not read {records}: {output[-1000:]}")
        read = int(summary["read"])
        return {
            "msg/s": float(summary["rate"]), "fetch msg/s": float(summary["fetch_rate"]),
            "join ms": float(summary["join"]), "cpu us/msg": cpu / read * 1e6,
            "start cpu s": start_cpu, "cpu us/msg less start": (cpu - start_cpu) / read * 1e6,
            "wall s": wall,
        }  # fmt: skip

    def loadgen_backlog(self, topic: str, records: int, seconds: float) -> dict[str, float]:
        result, wall, cpu = self.run_loadgen(
            seconds, ("--existing-topics", topic), interval="1s", producersPerTopic=0
        )
        read, rates = result["totalMessagesReceived"], result["consumeRate"]
        last = max((i for i, rate in enumerate(rates) if rate > 0), default=0)
        if read < records or not 0 < last < len(rates) - 1:
            raise SystemExit(
                f"loadgen read {read} of {records} in {last + 1} of {len(rates)} 1-s intervals: "
                "it must read them all, in more than one interval and before the last "
                "(--backlog, --consume-seconds)"
            )
        in_run = result["clientCpu"]["cpuSeconds"]
        return {
            "msg/s": statistics.mean(rates[:last]), "cpu us/msg": cpu / read * 1e6,
            "start cpu s": cpu - in_run, "cpu us/msg less start": in_run / read * 1e6,
            "wall s": wall,
        }  # fmt: skip

    def run_loadgen(
        self,
        seconds: float,
        options: tuple[str, ...] = (),
        interval: str = "5s",
        **workload: object,
    ) -> tuple[dict, float, float]:
        """``loadgen run`` of the bench's workload with ``workload``'s fields changed, ``options``
        added to its command line: its result, wall seconds and CPU seconds (its whole tree)."""
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
             "--warmup", "0", "--duration", f"{seconds}s", "--stats-interval", interval,
             "-o", str(out), "--no-report", *options], timeout_s=seconds + 180,
        )  # fmt: skip
        [result_path] = out.glob("*.json")
        return json.loads(result_path.read_text()), wall, cpu

    def loadgen(self, seconds: float, **workload: object) -> dict[str, float]:
        result, wall, cpu = self.run_loadgen(seconds, **workload)
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
    parser.add_argument(
        "--max-records",
        type=int,
        default=1_500_000,
        help="ProducerPerformance's records at max rate",
    )
    parser.add_argument(
        "--backlog", type=int, default=3_000_000, help="messages in the topic both consumers read"
    )
    parser.add_argument(
        "--fill-rate", type=int, default=250_000, help="msg/s of the run that fills it"
    )
    parser.add_argument(
        "--consume-seconds", type=float, default=25, help="loadgen's consumer-only run"
    )
    args = parser.parse_args()
    broker = launcher.start("kafka", upstream=True)
    try:
        with tempfile.TemporaryDirectory() as folder:
            bench = Bench(broker.address, Path(folder))
            backlog, records = bench.fill(args.backlog, args.fill_rate)
            print(f"backlog: {records} messages in {backlog}", flush=True)
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
                "backlog: ConsumerPerformance": lambda: bench.consumer_perf(backlog, records),
                "backlog: loadgen": lambda: bench.loadgen_backlog(
                    backlog, records, args.consume_seconds),
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
