"""A bridge to pytest-benchmark: a loadgen run as one benchmark round, its numbers in extra_info.

pytest-benchmark times the run (one round, one iteration: a load run is its own repetition),
and ``extra_info`` carries throughput, counts and latency percentiles, so ``--benchmark-save``
stores them and ``pytest-benchmark compare`` lines saved runs up against each other.
"""

from __future__ import annotations

from typing import Any

from loadgen.api import run
from loadgen.running.result import Result

EXTRA_PERCENTILES = {"p50": 50.0, "p99": 99.0, "p999": 99.9}


def benchmark_info(result: Result) -> dict[str, float | int | str]:
    """The numbers of ``result`` under flat, stable names (latencies in ms)."""
    info: dict[str, float | int | str] = {
        "loadgen_workload": result.workload,
        "loadgen_driver": result.driver,
        "publish_rate": round(result.publish_rate, 1),
        "consume_rate": round(result.consume_rate, 1),
        "sent": result.sent,
        "received": result.received,
        "errors": result.errors,
        "missing": result.missing,
    }
    for prefix, latency in (("publish", result.publish), ("e2e", result.e2e)):
        for name, percentile in EXTRA_PERCENTILES.items():
            info[f"{prefix}_{name}_ms"] = round(latency.percentile(percentile), 3)
        info[f"{prefix}_max_ms"] = round(latency.max_ms, 3)
    return info


def run_benchmarked(benchmark: Any, workload: Any, driver: Any, **options: Any) -> Result:
    """Run under pytest-benchmark's ``benchmark`` fixture and report into its ``extra_info``."""
    result = benchmark.pedantic(
        run, args=(workload, driver), kwargs=options, rounds=1, iterations=1
    )
    benchmark.extra_info.update(benchmark_info(result))
    return result
