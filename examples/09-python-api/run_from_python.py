"""A run driven from Python: build the workload and driver in code, run them over two worker
processes, check an SLO, save the result. No broker needed (the memory driver); about 5 s.

    python examples/09-python-api/run_from_python.py [OUT_DIR]    # default results/python-api

Look at: the percentile table (``result.table()``), then a line with the figures read from the
``Result`` object, then where the JSON went. In the JSON, ``run.placement.processes`` is 2 and
``run.workerTotals`` has one entry per worker process. From async code, ``await
loadgen.arun(...)`` takes the same arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path

import loadgen


def main(out: Path) -> None:
    workload = loadgen.workload(  # OMB's field names (snake_case works too), checked as in YAML
        name="python-api",
        topics=2,  # the memory driver gives each worker process whole topics: two for two
        partitionsPerTopic=2,
        messageSize=512,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=4000,
        testDurationMinutes=1,  # overridden by duration= below
    )
    memory = loadgen.driver("memory")  # any driver: loadgen.driver("kafka", commonConfig=...)

    result = loadgen.run(workload, memory, duration="2s", warmup=0, processes=2)

    print(result.table())
    print(
        f"sent {result.sent}, received {result.received}, "
        f"publish rate {result.publish_rate:.0f} msg/s, e2e p99 {result.e2e.p99_ms:.3f} ms"
    )
    # raises AssertionError with every missed threshold and the table; silent when met
    loadgen.assert_slo(result, "e2e.p99<50ms", "rate>=0.99", "lost==0")
    saved = result.save(out / "python-api.json")  # the same document `loadgen run` writes
    print(f"result: {saved}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/python-api"))
