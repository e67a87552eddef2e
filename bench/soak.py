"""A long run at a steady rate against tansu: does loadgen's own memory or file-handle count grow?

Starts tansu, runs ``loadgen run`` as a child process for ``--minutes`` at ``--rate``, and
samples every ``--sample-s`` seconds loadgen's RSS, open file descriptors, threads and CPU (from
/proc, summed over the coordinator and its worker processes), and tansu's RSS and CPU (the
broker's: it keeps every message, its retention is not enforced). After the run: the result's
accounting, whether the run's topics are gone from tansu, and tansu's RSS once they are.
Exits 1 when loadgen's RSS grew by more than ``--rss-bound-mb`` or its descriptors by more than
``--fd-bound`` between the second sample and the last one taken while every worker process was
up (the first minute holds the start-up allocations; the workers exit before the result).

    python bench/soak.py --minutes 15 --rate 2000 --producer linger.ms=100

tansu's fetch cost grows with the record batches it stores; with the
linger.ms=5 of the test config, 2000 msg/s on 4 partitions saturated it after ~3 minutes and the
consumer stopped. ``linger.ms=100`` (50-message batches) keeps it at a fraction of a core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from confluent_kafka.admin import AdminClient

from loadgen.testing.tansu import start_tansu, tansu_driver_config


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the coordinator and its worker processes)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [pid, *(descendant for child in children for descendant in tree(int(child)))]


def summed(pids: list[int], measure) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):  # a worker just ended
            total += measure(pid)
    return total


class Sampler:
    """Each call: memory, descriptors and threads now, and CPU % since the previous call."""

    def __init__(self, pid: int, broker_pid: int) -> None:
        self.pid, self.broker_pid = pid, broker_pid
        self.started = self.last = time.monotonic()
        self.cpu = (0.0, cpu_s(broker_pid))

    def __call__(self) -> dict[str, float]:
        now = time.monotonic()
        pids = tree(self.pid)
        cpu = (summed(pids, cpu_s), cpu_s(self.broker_pid))
        spent = [after - before for before, after in zip(self.cpu, cpu, strict=True)]
        share = [round(100 * seconds / (now - self.last)) for seconds in spent]
        self.last, self.cpu = now, cpu
        return {
            "minute": round((now - self.started) / 60, 2),
            "processes": len(pids),
            "loadgen_rss_mb": round(summed(pids, rss_mb), 1),
            "rss_mb_by_process": [round(summed([pid], rss_mb), 1) for pid in pids],
            "loadgen_fds": summed(pids, lambda pid: len(os.listdir(f"/proc/{pid}/fd"))),
            "loadgen_threads": summed(pids, lambda pid: len(os.listdir(f"/proc/{pid}/task"))),
            "loadgen_cpu_pct": share[0],
            "tansu_rss_mb": round(rss_mb(self.broker_pid), 1),
            "tansu_cpu_pct": share[1],
        }


def files(folder: Path, address: str, args: argparse.Namespace) -> tuple[Path, Path]:
    workload = {
        "name": "soak",
        "topics": 1,
        "partitionsPerTopic": 4,
        "messageSize": 1024,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": args.rate,
        "testDurationMinutes": args.minutes,
        "warmupDurationMinutes": 0,
    }
    driver = {"name": "Kafka", "driver": "kafka", **tansu_driver_config(address)}
    for section, extra in (("producerConfig", args.producer), ("consumerConfig", args.consumer)):
        driver[section] += "".join(f"\n{line}" for line in extra)
    (folder / "soak.yaml").write_text(yaml.safe_dump(workload))
    (folder / "kafka.yaml").write_text(yaml.safe_dump(driver))
    return folder / "soak.yaml", folder / "kafka.yaml"


def our_topics(address: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": address})
    names = admin.list_topics(timeout=10).topics
    return sorted(name for name in names if name.startswith("test-topic"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--sample-s", type=float, default=60)
    parser.add_argument("--rss-bound-mb", type=float, default=50)
    parser.add_argument("--fd-bound", type=int, default=5)
    parser.add_argument("--producer", action="append", default=[], help="key=value, repeatable")
    parser.add_argument("--consumer", action="append", default=[], help="key=value, repeatable")
    args = parser.parse_args()
    broker = start_tansu()
    folder = Path(tempfile.mkdtemp(prefix="loadgen-soak-"))
    workload, driver = files(folder, broker.address, args)
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload)]
    command += ["-o", str(folder / "out"), "--stats-interval", "10s"]
    samples = []
    try:
        console = folder / "console.log"
        with console.open("wb") as out:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        sample = Sampler(child.pid, broker.pid)
        next_sample = sample.started + 5
        while child.poll() is None:
            if time.monotonic() >= next_sample:
                samples.append(sample())
                print(json.dumps(samples[-1]), flush=True)
                next_sample += args.sample_s
            time.sleep(0.5)
        output = console.read_text(errors="replace")
        [result_path] = (folder / "out").glob("*.json")
        result = json.loads(result_path.read_text())
        left = our_topics(broker.address)
        time.sleep(2)
        tansu_after = rss_mb(broker.pid)
    finally:
        broker.stop()
    workers_up = max(s["processes"] for s in samples)
    running = [s for s in samples if s["processes"] == workers_up]
    growth_rss = running[-1]["loadgen_rss_mb"] - running[1]["loadgen_rss_mb"]
    growth_fds = running[-1]["loadgen_fds"] - running[1]["loadgen_fds"]
    print(output[-1500:])
    summary = {
        "command": " ".join(command[1:]),
        "exit": child.returncode,
        "sent": result["totalMessagesSent"],
        "received": result["totalMessagesReceived"],
        "lost": result.get("totalLost"),
        "duplicates": result.get("totalDuplicates"),
        "loadgen_rss_growth_mb": round(growth_rss, 1),
        "loadgen_fd_growth": growth_fds,
        "topics_left": left,
        "tansu_rss_after_delete_mb": round(tansu_after, 1),
    }
    print(json.dumps(summary, indent=2))
    bounded = growth_rss <= args.rss_bound_mb and growth_fds <= args.fd_bound
    return 0 if bounded and child.returncode == 0 and not left else 1


if __name__ == "__main__":
    sys.exit(main())
