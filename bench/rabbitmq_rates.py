"""RabbitMQ latency at fixed rates: 1 topic, 16 routing-key partitions, 1 KiB, 1 producer and
1 consumer in one loadgen process, through the same runner as ``loadgen run``.

Usage: python bench/rabbitmq_rates.py [--rates 1000 5000 20000] [--seconds 60] [--warmup 10]

Starts a local RabbitMQ (classic queues, no persistence, confirms, prefetch 1000, manual acks)
and prints, per rate: the rate held, publish / end-to-end / from-intended percentiles of the
measured phase (from the result JSON) and the CPU of the broker and of the loadgen process.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import psutil

from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload, load_yaml, parse_model
from loadgen_drivers.rabbitmq.local.server import start_rabbitmq

CLASSIC_WORKLOAD = (
    Path(__file__).resolve().parents[1] / "configs/workloads/1-topic-16-partitions-1kb-10k.yaml"
)


def workload(rate: int) -> Workload:
    """OMB's 1-topic / 16-partition / 1 KiB workload from configs/workloads, at ``rate``."""
    fields = load_yaml(CLASSIC_WORKLOAD) | {"name": f"rabbitmq-{rate}", "producerRate": rate}
    return parse_model(Workload, fields, file=str(CLASSIC_WORKLOAD))


def broker_cpu_seconds(pid: int) -> float:
    process = psutil.Process(pid)
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        times = each.cpu_times()
        total += times.user + times.system
    return total


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=10)
    args = parser.parse_args()
    broker = start_rabbitmq()
    spec = DriverSpec(name="RabbitMQ", kind="rabbitmq", config=broker.driver_config)
    out = Path(tempfile.mkdtemp(prefix="loadgen-bench-"))
    options = RunOptions(duration_s=args.seconds, warmup_s=args.warmup, stats_interval_s=10)
    print(
        "| target msg/s | held msg/s | publish p50 / p99 ms | e2e p50 / p99 / p99.9 / max ms "
        "| publish delay p50 / p99 µs | from intended p99 ms | broker CPU | loadgen CPU | errors |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for rate in args.rates:
            broker0, own0, wall0 = broker_cpu_seconds(broker.pid), own_cpu_seconds(), time.time()
            report = run_one(RunRequest(workload(rate), spec, options, out_dir=out))
            wall = time.time() - wall0
            broker_cpu = (broker_cpu_seconds(broker.pid) - broker0) / wall
            own_cpu = (own_cpu_seconds() - own0) / wall
            r = report.result
            held = sent_per_second(measured_intervals(report.outcome.intervals))
            print(
                f"| {rate:,} | {held:,.0f} "
                f"| {r['aggregatedPublishLatency50pct']:.2f} / "
                f"{r['aggregatedPublishLatency99pct']:.2f} "
                f"| {r['aggregatedEndToEndLatency50pct']:.2f} / "
                f"{r['aggregatedEndToEndLatency99pct']:.2f} / "
                f"{r['aggregatedEndToEndLatency999pct']:.2f} / "
                f"{r['aggregatedEndToEndLatencyMax']:.2f} "
                f"| {r['aggregatedPublishDelayLatency50pct']:.0f} / "
                f"{r['aggregatedPublishDelayLatency99pct']:.0f} "
                f"| {r['aggregatedPublishFromIntendedLatency99pct']:.2f} "
                f"| {broker_cpu:.0%} | {own_cpu:.0%} | {r['totalPublishErrors']} "
                f"(received {r['totalMessagesReceived']:,} of {r['totalMessagesSent']:,}) |",
                flush=True,
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
