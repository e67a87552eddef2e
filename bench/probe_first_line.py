"""Time from starting ``loadgen probe`` to its first latency line, against local brokers.

Usage: python bench/probe_first_line.py [--rounds 5]

Starts a local tansu (and RabbitMQ when installed), then per round launches
``python -m loadgen probe URL --duration 2s`` as a fresh process and timestamps the first
stdout line. Prints every round and the median per broker; also the bare interpreter start
(``python -c pass``) and ``import loadgen.cli.main`` for scale.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from loadgen_drivers.kafka.local.tansu import start_tansu
from loadgen_drivers.rabbitmq.local.server import rabbitmq_installed, start_rabbitmq


def first_line_seconds(url: str) -> float:
    started = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-m", "loadgen", "probe", url, "--duration", "2s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as child:
        assert child.stdout is not None
        line = child.stdout.readline()
        elapsed = time.perf_counter() - started
        child.wait(timeout=30)
    assert " recv " in line, f"no latency line from {url}: {line!r}"
    return elapsed


def command_seconds(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True)
    return time.perf_counter() - started


def report(label: str, samples: list[float]) -> None:
    shown = " ".join(f"{s:.3f}" for s in samples)
    print(f"{label:<28} median {statistics.median(samples):.3f} s   rounds: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    report("python -c pass", [command_seconds("-c", "pass") for _ in range(rounds)])
    report(
        "import loadgen.cli.main",
        [command_seconds("-c", "import loadgen.cli.main") for _ in range(rounds)],
    )
    brokers = [start_tansu()]
    if rabbitmq_installed():
        brokers.append(start_rabbitmq())
    try:
        for broker in brokers:
            url = (
                f"kafka://{broker.address}"
                if broker.kind == "kafka"
                else broker.driver_config["amqpUris"][0]
            )
            report(
                f"probe {broker.kind} first line", [first_line_seconds(url) for _ in range(rounds)]
            )
    finally:
        for broker in brokers:
            broker.stop()


if __name__ == "__main__":
    main()
