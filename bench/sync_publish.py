"""Synchronous (producerMaxInFlight: 1) against asynchronous publishing, same broker, same run.

One producer, one 1-partition topic, 1 KiB, consumer attached; each mode runs ``--rounds``
times, alternating. Synchronous mode is asked for more than it can carry, so its rate is the
round trip's; the asynchronous run is asked for ``--async-rate``. Prints one line per run and
the medians.

    python bench/sync_publish.py --broker kafka --rounds 3
    python bench/sync_publish.py --broker pulsar --rounds 3
"""

from __future__ import annotations

import argparse
import statistics

import loadgen
import workloads
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import Workload
from loadgen_drivers.kafka.local.tansu import start_tansu
from loadgen_drivers.pulsar.local.lite import start_pulsar_lite


def workload(rate: float, window: int | None) -> Workload:
    changes = {} if window is None else {"producerMaxInFlight": window}
    return workloads.one_topic(f"sync-{window}", rate, partitionsPerTopic=1, **changes)


def line(row) -> str:
    return f"{row[0]:10.0f} msg/s  publish p50 {row[1]:.3f} ms  p99 {row[2]:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--broker", choices=["kafka", "pulsar"], required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--async-rate", type=float, default=20_000)
    args = parser.parse_args()
    broker = start_tansu() if args.broker == "kafka" else start_pulsar_lite(default_partitions=1)
    config = dict(broker.driver_config)
    if args.broker == "kafka":
        config["producerConfig"] = "acks=all\nlinger.ms=1\nbatch.size=131072"
    spec = DriverSpec(args.broker, args.broker, config, "bench")
    rows: dict[str, list[tuple[float, float, float]]] = {"sync": [], "async": []}
    try:
        for _ in range(args.rounds):
            for mode, rate, window in (("sync", 50_000, 1), ("async", args.async_rate, None)):
                result = loadgen.run(
                    workload(rate, window), spec, duration=args.seconds, warmup=2
                ).document
                rates = result["publishRate"]
                row = (
                    sum(rates) / len(rates),
                    result["aggregatedPublishLatency50pct"],
                    result["aggregatedPublishLatency99pct"],
                )
                rows[mode].append(row)
                print(mode, line(row))
    finally:
        broker.stop()
    for mode, values in rows.items():
        medians = [statistics.median(column) for column in zip(*values, strict=True)]
        print("median", mode, line(medians))


if __name__ == "__main__":
    main()
