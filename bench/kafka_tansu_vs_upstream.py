"""The same run on tansu and on Apache Kafka: how far the stand-in's figures are from the server's.

Both brokers run at once on this host (one node each); each round runs the workload on both, in
alternating order, with the same client settings: OMB's (``acks=all``, ``linger.ms=1``) plus,
because tansu needs it, ``fetch.wait.max.ms=5``, and a 6-s consumer session (Kafka's least;
tansu's file has 2 s); ``--tansu-file``
runs tansu with its own driver file instead (``linger.ms=5``). Prints each run's publish and
end-to-end p50/p99/p99.9 and rate, then the medians per broker and their ratios
(tansu / Kafka).

    python bench/kafka_tansu_vs_upstream.py --rounds 3 --seconds 20 --rate 10000
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
    "producerConfig": "acks=all\nlinger.ms=1\nbatch.size=131072",
    "consumerConfig": (
        "auto.offset.reset=earliest\nenable.auto.commit=false\nfetch.wait.max.ms=5\n"
        "session.timeout.ms=6000\nheartbeat.interval.ms=1000"
    ),
}


def workload(rate: int, seconds: int) -> dict:
    return {
        "name": f"16 partitions 1 KiB {rate}", "topics": 1, "partitionsPerTopic": 16,
        "messageSize": 1024, "producersPerTopic": 1, "producerRate": rate,
        "subscriptionsPerTopic": 1, "consumerPerSubscription": 1,
        "testDurationMinutes": seconds / 60,
    }  # fmt: skip


def one_run(name: str, config: dict, rate: int, seconds: int) -> dict[str, float]:
    result = loadgen.run(
        workload(rate, seconds), loadgen.driver("kafka", name=name, **config), warmup=5
    )
    assert result.lost == 0 and result.duplicates == 0, (name, result.lost, result.duplicates)
    figures = {label: result.document[key] for label, key in FIELDS.items()}
    figures["msg/s"] = result.publish_rate
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--tansu-file", action="store_true", help="tansu's own settings")
    args = parser.parse_args()
    tansu = launcher.start("kafka")
    upstream = launcher.start("kafka", upstream=True)
    try:
        configs = {
            "tansu": {**tansu.driver_config, **({} if args.tansu_file else SAME_SETTINGS)},
            "kafka": {**upstream.driver_config, **SAME_SETTINGS},
        }
        runs: dict[str, list[dict[str, float]]] = {"tansu": [], "kafka": []}
        for round_number in range(args.rounds):
            order = ["tansu", "kafka"] if round_number % 2 == 0 else ["kafka", "tansu"]
            for name in order:
                figures = one_run(name, configs[name], args.rate, args.seconds)
                runs[name].append(figures)
                print(round_number, name, {k: round(v, 3) for k, v in figures.items()})
        medians = {
            name: {label: statistics.median(run[label] for run in rows) for label in rows[0]}
            for name, rows in runs.items()
        }
        for name, figures in medians.items():
            print("median", name, {k: round(v, 3) for k, v in figures.items()})
        print("tansu/kafka", {
            label: round(medians["tansu"][label] / medians["kafka"][label], 2)
            for label in medians["kafka"]
        })  # fmt: skip
    finally:
        tansu.stop()
        upstream.stop()


if __name__ == "__main__":
    main()
