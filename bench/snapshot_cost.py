"""What a worker's per-interval snapshot costs, interval by interval, the first one included.

Usage: python bench/snapshot_cost.py [--rate 20000] [--seconds 6] [--rounds 3]

A :class:`~loadgen.engine.local_worker.LocalWorker` on the in-process memory driver (one topic, one
producer, one consumer, 1 KiB) sends at ``--rate``; each second the script takes a snapshot,
as the coordinator does, and prints its wall time and the CPU time of the thread that took it.
The snapshot holds the GIL while it bins the interval, so its time is time the producer loop
and the client's threads stand still. Each round is a fresh process (a cold start, as a run's
first interval is).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from loadgen.driver_api import TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker


def one_run(rate: float, seconds: int) -> list[tuple[float, float]]:
    worker = LocalWorker(open_driver(DriverSpec(name="memory", kind="memory", config={})))
    worker.driver.create_topics([TopicSpec("t", 1)])
    worker.create_consumers([("t", "s")])
    worker.create_producers(["t"])
    worker.start_load(rate, [bytes(1024)], "NO_KEY")
    costs = []
    for _ in range(seconds):
        time.sleep(1.0)
        wall, cpu = time.perf_counter(), time.thread_time()
        worker.snapshot(0, 0, warmup=False)
        costs.append((time.perf_counter() - wall, time.thread_time() - cpu))
    worker.stop_load(5)
    worker.close(delete_topics=True)
    return costs


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(one_run(**json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20_000)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    runs = []
    for _ in range(options.rounds):
        args = json.dumps({"rate": options.rate, "seconds": options.seconds})
        done = subprocess.run(
            [sys.executable, __file__, "--child", args], capture_output=True, text=True, check=True
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(" | ".join(f"{w * 1000:.1f} ms ({c * 1000:.1f} CPU)" for w, c in runs[-1]))
    first = statistics.median(run[0][1] for run in runs) * 1000
    later = statistics.median(c for run in runs for _, c in run[1:]) * 1000
    print(f"median CPU: first snapshot {first:.1f} ms, later ones {later:.1f} ms")


if __name__ == "__main__":
    main()
