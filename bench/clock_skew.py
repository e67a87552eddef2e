"""Clock correction: end-to-end latency with a consumer worker whose clock is 250 ms ahead.

Usage: python bench/clock_skew.py [--rounds 3] [--seconds 5] [--rate 1000] [--skew-ms 250]
       [--baseline faketime|plain]

Starts a local tansu and three `loadgen worker` processes on loopback ports, the second under
libfaketime with its wall clock ``--skew-ms`` ahead, the third under libfaketime with no skew
(the library alone lengthened the Kafka consumer's tail, so by default the baseline carries it
too; ``--baseline plain`` starts the third without it). Each
round runs the real `loadgen run --workers` path (runner.execute) twice, OMB's split putting the
producer on the first worker: skewed (consumer on the fast-clock worker) and unskewed (consumer
on the third worker). Prints each run's corrected and uncorrected e2e p50/p99, the consumer
worker's measured offset, the shift and the bound, then the medians over the rounds.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test harness

from harness.faketime import INSTALL_HINT, faketime_installed, skewed_env
from loadgen.distributed.placement import Placement
from loadgen.distributed.spawn import announced_url, start_worker_process, stop_worker_processes
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen.spec import Workload, load_yaml, parse_model
from loadgen_drivers.kafka.local.tansu import start_tansu

ONE_PARTITION = (
    Path(__file__).resolve().parents[1] / "configs/workloads/1-topic-1-partition-1kb.yaml"
)
FIGURES = (
    ("e2e p50", "aggregatedEndToEndLatency50pct"),
    ("e2e p99", "aggregatedEndToEndLatency99pct"),
    ("uncorrected p50", "aggregatedEndToEndLatencyUncorrected50pct"),
    ("uncorrected p99", "aggregatedEndToEndLatencyUncorrected99pct"),
)


def workload(rate: int) -> Workload:
    """OMB's one-topic, one-partition, 1 KiB workload at ``rate``."""
    return parse_model(Workload, load_yaml(ONE_PARTITION) | {"producerRate": rate}, file="bench")


def one_run(spec: DriverSpec, chosen: Workload, urls: list[str], token: str, seconds: float):
    options = RunOptions(duration_s=seconds, warmup_s=1, stats_interval_s=1)
    _, result, outcome = execute(
        RunRequest(chosen, spec, options, placement=Placement(tuple(urls), token=token))
    )
    if outcome.incomplete:
        raise SystemExit(f"run incomplete: {outcome.stop_detail}")
    correction = result["run"]["clockCorrection"]
    row = {name: result.get(field) for name, field in FIGURES}
    row |= {
        "consumer offset": result["run"]["clockOffsetsMs"][urls[1]],
        "shift": correction["maxShiftMs"],
        "bound": correction["boundMs"],
    }
    return row


def show(label: str, row: dict) -> str:
    return f"{label:9} " + "  ".join(
        f"{name} {'-' if value is None else f'{value:.3f}'}" for name, value in row.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--skew-ms", type=float, default=250)
    parser.add_argument("--baseline", choices=("faketime", "plain"), default="faketime")
    args = parser.parse_args()
    if not faketime_installed():
        raise SystemExit(f"libfaketime is missing: {INSTALL_HINT}")
    token = secrets.token_urlsafe(16)
    with ExitStack() as stack:
        broker = start_tansu()
        stack.callback(broker.stop)
        spec = DriverSpec(name="Kafka", kind="kafka", config=broker.driver_config)
        processes = [
            start_worker_process(token),
            start_worker_process(token, extra_env=skewed_env(args.skew_ms / 1000)),
            start_worker_process(
                token, extra_env=skewed_env(0) if args.baseline == "faketime" else {}
            ),
        ]
        stack.callback(stop_worker_processes, processes)
        deadline = time.monotonic() + 30
        plain, skewed, other = [announced_url(p, deadline, "bench worker") for p in processes]
        chosen = workload(args.rate)
        runs: dict[str, list[dict]] = {"skewed": [], "unskewed": []}
        for number in range(1, args.rounds + 1):
            for label, urls in (("skewed", [plain, skewed]), ("unskewed", [plain, other])):
                row = one_run(spec, chosen, urls, token, args.seconds)
                runs[label].append(row)
                print(show(f"round {number} {label}", row), flush=True)
        for label, rows in runs.items():
            medians = {
                name: statistics.median(r[name] for r in rows)
                if rows[0][name] is not None
                else None
                for name in rows[0]
            }
            print(show(f"median {label}", medians))


if __name__ == "__main__":
    main()
