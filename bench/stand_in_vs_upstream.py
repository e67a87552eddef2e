"""The same run on a stand-in and on the server it stands in for: how far the stand-in's figures
are from the server's.

``kafka``: tansu beside Apache Kafka; ``pravega``: loadgen's local Pravega beside Pravega's own
standalone. Both brokers run at once on this host (one node each); each round runs the workload
on both, in alternating order, with the same client settings. Kafka's: OMB's (``acks=all``,
``linger.ms=1``) plus, because tansu needs it, ``fetch.wait.max.ms=5``, and a 6-s consumer
session (Kafka's least; tansu's file has 2 s); ``--stand-in-file`` runs the stand-in with its own
driver file instead (tansu's ``linger.ms=5``). Pravega's: each broker's driver file as printed.
Prints each run's publish and end-to-end p50/p99/p99.9, rate and client CPU per message, then
the medians per broker and their ratios (stand-in / upstream).

    python bench/stand_in_vs_upstream.py kafka --rounds 3 --seconds 20 --rate 10000
    python bench/stand_in_vs_upstream.py pravega --rounds 3 --seconds 20 --rate 2000
"""

from __future__ import annotations

import argparse
import statistics

import loadgen
from loadgen.local_brokers import launcher

FIELDS = {
    "pub p50": "aggregatedPublishLatency50pct",
    "pub p99": "aggregatedPublishLatency99pct",
    "pub p99.9": "aggregatedPublishLatency999pct",
    "e2e p50": "aggregatedEndToEndLatency50pct",
    "e2e p99": "aggregatedEndToEndLatency99pct",
    "e2e p99.9": "aggregatedEndToEndLatency999pct",
}
SAME_SETTINGS = {
    "kafka": {
        "producerConfig": "acks=all\nlinger.ms=1\nbatch.size=131072",
        "consumerConfig": (
            "auto.offset.reset=earliest\nenable.auto.commit=false\nfetch.wait.max.ms=5\n"
            "session.timeout.ms=6000\nheartbeat.interval.ms=1000"
        ),
    },
    "pravega": {},
}
"""Client settings both brokers of a kind run with, over their driver files'."""


def workload(rate: int, seconds: int) -> dict:
    return {
        "name": f"16 partitions 1 KiB {rate}", "topics": 1, "partitionsPerTopic": 16,
        "messageSize": 1024, "producersPerTopic": 1, "producerRate": rate,
        "subscriptionsPerTopic": 1, "consumerPerSubscription": 1,
        "testDurationMinutes": seconds / 60,
    }  # fmt: skip


def one_run(kind: str, name: str, config: dict, rate: int, seconds: int) -> dict[str, float]:
    result = loadgen.run(
        workload(rate, seconds), loadgen.driver(kind, name=name, **config), warmup=5
    )
    assert result.lost == 0 and result.duplicates == 0, (name, result.lost, result.duplicates)
    figures = {label: result.document[key] for label, key in FIELDS.items()}
    figures["msg/s"] = result.publish_rate
    figures["cpu us/msg"] = result.document["clientCpu"]["cpuMicrosPerMessage"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(SAME_SETTINGS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--stand-in-file", action="store_true", help="the stand-in's own file")
    args = parser.parse_args()
    same = SAME_SETTINGS[args.kind]
    stand_in = launcher.start(args.kind)
    upstream = launcher.start(args.kind, upstream=True)
    try:
        configs = {
            "stand-in": {**stand_in.driver_config, **({} if args.stand_in_file else same)},
            "upstream": {**upstream.driver_config, **same},
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
        for round_number in range(args.rounds):
            order = list(configs) if round_number % 2 == 0 else list(reversed(configs))
            for name in order:
                figures = one_run(args.kind, name, configs[name], args.rate, args.seconds)
                runs[name].append(figures)
                print(round_number, name, {k: round(v, 3) for k, v in figures.items()})
        medians = {
            name: {label: statistics.median(run[label] for run in rows) for label in rows[0]}
            for name, rows in runs.items()
        }
        for name, figures in medians.items():
            print("median", name, {k: round(v, 3) for k, v in figures.items()})
        print("stand-in/upstream", {
            label: round(medians["stand-in"][label] / medians["upstream"][label], 2)
            for label in medians["upstream"]
        })  # fmt: skip
    finally:
        stand_in.stop()
        upstream.stop()


if __name__ == "__main__":
    main()
