"""loadgen beside Apache Pulsar's own pulsar-perf, and pulsar-lite beside Apache Pulsar, in one run.

Two brokers run at once for the whole bench: Apache Pulsar standalone (``loadgen brokers up
pulsar --upstream``'s, three bookies, ledgers written 1/1/1) and pulsar-lite (the stand-in,
``loadgen brokers up pulsar``'s). Each round runs two groups of three sides, the order reversed
every other round, so each pair (pulsar-perf and loadgen on Apache Pulsar; loadgen on Apache
Pulsar and on pulsar-lite) alternates which goes first:

- max rate, producing only, for ``--seconds`` at an unreachable 10M msg/s:
  ``pulsar-perf produce`` against ``loadgen run`` with no subscription; msg/s and client CPU
  per message;
- at ``--rate`` msg/s, a producer and a consumer: ``pulsar-perf consume`` (started first,
  stopped by SIGTERM 2 s after the producer ends; it prints its summary as it exits) beside
  ``pulsar-perf produce -r RATE``, against ``loadgen run`` at that rate with one subscription;
  publish p50/p99/p99.9 (send to acknowledgement) and end-to-end p50/p99/p99.9/mean.

Every side writes to a fresh 16-partition topic (pulsar-perf's made through the admin REST
before it starts, loadgen's by loadgen; pulsar-lite makes 16 partitions of every topic), 1 KiB
messages. pulsar-perf is pulsar-testclient 4.0.8's jar on Apache Pulsar 4.2.4's classpath (4.2.4
of the testclient is not on Maven Central), run with ``-Xmx512m``.

Same settings on every side: batching 1 ms, at most 1000 messages or 1 MiB a batch, 50,000
messages pending across partitions, one I/O thread, a Shared subscription with a receiver queue
of 200 a partition (what pulsar-lite needs; Apache Pulsar runs them too, so every row compares),
individual acks, no warm-up excluded (``--warmup 0``, ``--warmup-time 0``). loadgen's
namespace is written 1/1/1 like ``public/default``, pulsar-perf's. Not the same: the partition
router (the Java client moves to the next partition every 10 publish delays, pulsar-client's C++
router every one) and pulsar-perf's end-to-end latency, ``now - publishTime`` in whole
milliseconds where loadgen's is its stamp's send time to receipt in microseconds.

msg/s is pulsar-perf's acknowledged messages over ``-time`` (its own aggregated msg/s divides
by the time to its exit, which its main thread, waking every 10 s, puts up to 10 s after the
last send) and the mean of loadgen's per-interval publish rates. CPU per message is user +
system of the side's whole process tree (both JVMs at ``--rate``, each JVM's start and idle
exit and loadgen's interpreter start included) over the messages it sent, never a broker's.

    python bench/pulsar_vs_perf_tools.py --rounds 3 --seconds 15 --rate 5000
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

from kafka_vs_perf_tools import PARTITIONS, SIZE, Bench, children_cpu, measured, medians
from loadgen.driver_api.local.java import java_binary
from loadgen.driver_api.local.process import LocalBroker
from loadgen.local_brokers import launcher
from loadgen_drivers.pulsar.local.distribution import pulsar_perf_classpath

MAX_RATE = 10_000_000
BATCH = {"batchingMaxPublishDelayMs": 1, "batchingMaxMessages": 1000, "batchingMaxBytes": 1 << 20}
PENDING = 50_000
RECEIVER_QUEUE = 200
ONE_COPY = {"ensembleSize": 1, "writeQuorum": 1, "ackQuorum": 1}
PERF_PRODUCE = (
    "-s", str(SIZE), "-b", str(BATCH["batchingMaxPublishDelayMs"]),
    "-bm", str(BATCH["batchingMaxMessages"]), "-bb", str(BATCH["batchingMaxBytes"]),
    "-p", str(PENDING), "-ioThreads", "1", "--warmup-time", "0",
)  # fmt: skip
PERF_CONSUME = ("-st", "Shared", "-q", str(RECEIVER_QUEUE), "-ioThreads", "1")
PERF_MAIN = "org.apache.pulsar.testclient.PulsarPerfTestTool"
CONSUMER_READY = "Start receiving from"
CONSUMER_START_S = 60.0
DRAIN_S = 2.0
SENT = re.compile(r"Aggregated throughput stats --- (?P<count>\d+) records sent")
RECEIVED = re.compile(r"Aggregated throughput stats --- (?P<count>\d+) records received")
PUBLISH = ("p50", "p99", "p99.9")
END_TO_END = (*PUBLISH, "avg")
LATENCY_GROUPS = {"p50": "p50", "p99": "p99", "p99.9": "p999", "avg": "mean"}
LATENCY = re.compile(
    r"Aggregated latency stats --- Latency: mean: +(?P<mean>[\d.]+) ms - med: +(?P<p50>[\d.]+) - "
    r"95pct: +[\d.]+ - 99pct: +(?P<p99>[\d.]+) - 99\.9pct: +(?P<p999>[\d.]+)"
)


def driver_section(broker: LocalBroker, name: str) -> dict[str, Any]:
    """The driver file ``name`` for ``broker``: its client section with the bench's settings."""
    client = {**broker.driver_config["client"], "ioThreads": 1}
    if "httpUrl" in client:  # Apache Pulsar: the namespace written like public/default
        client["persistence"] = ONE_COPY
    return {
        "name": name, "driver": "pulsar", "client": client,
        "producer": {**BATCH, "maxPendingMessagesAcrossPartitions": PENDING},
        "consumer": {"subscriptionType": "Shared", "receiverQueueSize": RECEIVER_QUEUE},
    }  # fmt: skip


class Loadgen(Bench):
    """``loadgen run`` against one Pulsar broker: kafka_vs_perf_tools's ``run_loadgen`` and
    ``loadgen``, which use only ``folder`` and ``driver`` (its ``__init__`` is Kafka's)."""

    def __init__(self, broker: LocalBroker, folder: Path) -> None:
        folder.mkdir()
        self.folder = folder
        self.driver = folder / "driver.yaml"
        self.driver.write_text(yaml.safe_dump(driver_section(broker, folder.name)))


def latencies(output: str, prefix: str, names: tuple[str, ...]) -> dict[str, float]:
    """pulsar-perf's aggregated latency line, in ms: ``names`` of it, under ``prefix``."""
    found = LATENCY.search(output)
    if found is None:
        raise SystemExit(f"no aggregated latency in pulsar-perf's output: {output[-1500:]}")
    return {f"{prefix} {name}": float(found[LATENCY_GROUPS[name]]) for name in names}


def sent(output: str) -> int:
    """The messages pulsar-perf's producer had acknowledged."""
    found = SENT.search(output)
    if found is None:
        raise SystemExit(f"no aggregated throughput in pulsar-perf's output: {output[-1500:]}")
    return int(found["count"])


class PulsarPerf:
    """pulsar-perf against Apache Pulsar, each run on a topic of its own."""

    def __init__(self, broker: LocalBroker, folder: Path) -> None:
        self.service = broker.endpoints["service URL"]
        self.admin = broker.endpoints["admin URL"]
        self.folder = folder
        conf = folder / "client.conf"
        conf.write_text(f"brokerServiceUrl={self.service}\nwebServiceUrl={self.admin}\n")
        classpath = ":".join(str(jar) for jar in pulsar_perf_classpath())
        self.command = [str(java_binary("pulsar")), "-Xmx512m", "-cp", classpath, PERF_MAIN,
                        str(conf)]  # fmt: skip

    def topic(self) -> str:
        """A new partitioned topic in ``public/default``, made through the admin REST."""
        name = f"perf-{uuid.uuid4().hex[:8]}"
        request = urllib.request.Request(
            f"{self.admin}/admin/v2/persistent/public/default/{name}/partitions",
            data=str(PARTITIONS).encode(), method="PUT",
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        urllib.request.urlopen(request, timeout=30).close()
        return f"persistent://public/default/{name}"

    def produce(self, topic: str, rate: int, seconds: int) -> tuple[str, float, float]:
        return measured(
            [*self.command, "produce", "-u", self.service, *PERF_PRODUCE, "-r", str(rate),
             "-time", str(seconds), topic], timeout_s=seconds + 120,
        )  # fmt: skip

    def producer_only(self, seconds: int) -> dict[str, float]:
        output, wall, cpu = self.produce(self.topic(), MAX_RATE, seconds)
        count = sent(output)
        return {"msg/s": count / seconds, "cpu us/msg": cpu / count * 1e6,
                **latencies(output, "pub", PUBLISH), "wall s": wall}  # fmt: skip

    def with_consumer(self, rate: int, seconds: int) -> dict[str, float]:
        """``consume`` subscribed, then ``produce`` at ``rate``, then ``consume`` stopped once
        it has had :data:`DRAIN_S` to read the last messages; CPU of both JVMs."""
        topic = self.topic()
        log = self.folder / f"consume-{uuid.uuid4().hex[:8]}.log"
        cpu, start = children_cpu(), time.monotonic()
        with log.open("w") as sink:
            consumer = subprocess.Popen(
                [*self.command, "consume", "-u", self.service, *PERF_CONSUME,
                 "-ss", "perf", topic], stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                self.await_line(log, consumer)
                produced, _, _ = self.produce(topic, rate, seconds)
                time.sleep(DRAIN_S)
            finally:
                stop(consumer)
        wall, cpu = time.monotonic() - start, children_cpu() - cpu
        consumed, count = log.read_text(), sent(produced)
        received = RECEIVED.search(consumed)
        if received is None or int(received["count"]) < count:
            raise SystemExit(f"pulsar-perf consume did not read all {count}: {consumed[-1500:]}")
        return {"msg/s": count / seconds, "cpu us/msg": cpu / count * 1e6,
                **latencies(produced, "pub", PUBLISH),
                **latencies(consumed, "e2e", END_TO_END), "wall s": wall}  # fmt: skip

    @staticmethod
    def await_line(log: Path, consumer: subprocess.Popen) -> None:
        """Return once ``consume`` says it receives; fail if it exits or takes too long."""
        deadline = time.monotonic() + CONSUMER_START_S
        while CONSUMER_READY not in log.read_text():
            if consumer.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"pulsar-perf consume did not start: {log.read_text()[-1500:]}")
            time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    """SIGTERM (pulsar-perf prints its summary as it exits), SIGKILL after 30 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def ratios(over: dict[str, float], under: dict[str, float]) -> dict[str, float]:
    return {key: round(over[key] / under[key], 2) for key in over if under.get(key)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rate", type=int, default=5000)
    args = parser.parse_args()
    seconds, rate = args.seconds, args.rate
    with ExitStack() as stack:
        upstream = launcher.start("pulsar", upstream=True)
        stack.callback(upstream.stop)
        lite = launcher.start("pulsar")
        stack.callback(lite.stop)
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        perf = PulsarPerf(upstream, folder)
        apache, stand_in = Loadgen(upstream, folder / "apache"), Loadgen(lite, folder / "lite")
        groups: list[dict[str, Callable[[], dict[str, float]]]] = [
            {
                "max: pulsar-perf": lambda: perf.producer_only(seconds),
                "max: loadgen": lambda: apache.loadgen(seconds, subscriptionsPerTopic=0),
                "max: loadgen on pulsar-lite": lambda: stand_in.loadgen(
                    seconds, subscriptionsPerTopic=0),
            },
            {
                f"{rate}: pulsar-perf": lambda: perf.with_consumer(rate, seconds),
                f"{rate}: loadgen": lambda: apache.loadgen(seconds, producerRate=rate),
                f"{rate}: loadgen on pulsar-lite": lambda: stand_in.loadgen(
                    seconds, producerRate=rate),
            },
        ]  # fmt: skip
        report(run_rounds(groups, args.rounds), rate)


def run_rounds(
    groups: list[dict[str, Callable[[], dict[str, float]]]], rounds: int
) -> dict[str, list[dict[str, float]]]:
    """Every side of every group once a round, each group's order reversed every other round;
    each side's rows by name."""
    rows: dict[str, list[dict[str, float]]] = {}
    for round_number in range(rounds):
        print(f"round {round_number}, load average {os.getloadavg()}", flush=True)
        for sides in groups:
            names = list(sides) if round_number % 2 == 0 else list(sides)[::-1]
            for name in names:
                row = sides[name]()
                rows.setdefault(name, []).append(row)
                print(round_number, name, {k: round(v, 3) for k, v in row.items()}, flush=True)
    return rows


def report(rows: dict[str, list[dict[str, float]]], rate: int) -> None:
    """The medians, then loadgen / pulsar-perf and pulsar-lite / Apache Pulsar of them."""
    middle = {name: medians(found) for name, found in rows.items()}
    for name, figures in middle.items():
        print("median", name, figures)
    for load in ("max", str(rate)):
        print(
            f"{load}: loadgen / pulsar-perf",
            ratios(middle[f"{load}: loadgen"], middle[f"{load}: pulsar-perf"]),
        )
        print(
            f"{load}: pulsar-lite / Apache Pulsar",
            ratios(middle[f"{load}: loadgen on pulsar-lite"], middle[f"{load}: loadgen"]),
        )


if __name__ == "__main__":
    main()
