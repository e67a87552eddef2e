"""A long run at a steady rate: do loadgen's memory, descriptors or journal writes grow?

Starts a local broker (``--broker``: tansu for kafka, rabbitmq-server, pulsar-lite), runs
``loadgen run`` as a child process for ``--minutes`` at ``--rate``, and samples every
``--sample-s`` seconds each loadgen process's RSS and open descriptors (the coordinator and its
``--processes`` workers, from /proc) and their sum, loadgen's CPU, the broker's RSS and CPU, and
the journal's write time per interval, wall and CPU (median and max over the sample's
intervals: each journal record's ``writeMs`` and ``writeCpuMs`` are the previous append's).
It prints a markdown table, then the result's accounting and whether the broker kept up (mean
publish rate within 5 % of ``--rate``).

Exits 1 when loadgen's RSS (sum) grew by more than ``--rss-bound-mb`` or its descriptors by
more than ``--fd-bound`` from the first sample at or after ``--rss-from-minute`` to the last one
taken while the run was measuring: every worker process up (they exit before the result) and
intervals still being journaled (building the result and its report at the end is a transient
of its own, shown in the table but not counted as growth), when the run
failed, lost messages or fell behind, or when it left topics on tansu.

    python bench/soak.py --broker rabbitmq --minutes 60 --rate 2000 --processes 2
    python bench/soak.py --broker pulsar --minutes 15 --rate 2000 --processes 2 --stats-interval 1s
    python bench/soak.py --broker kafka --minutes 15 --rate 2000 --producer linger.ms=100

A run keeps ~1 KB of memory per interval by design (its counters; the histograms are spilled to
disk), in the coordinator for the run and again for each worker: at ``--stats-interval 1s`` with
two workers ~3 KB a second, ~10 MB an hour; at the default 10 s, a tenth of that.

tansu's fetch cost grows with the record batches it stores; with the linger.ms=5 of the test
config, 2000 msg/s on 4 partitions saturated it after ~3 minutes and the consumer stopped.
``linger.ms=100`` (50-message batches) keeps it at a fraction of a core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from loadgen.driver_api.local.process import LocalBroker
from loadgen.local_brokers import launcher


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ProcessLookupError(pid)  # a zombie: it has ended, its parent has not reaped it yet


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants (the coordinator and its worker processes)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:  # it has just ended
        return []
    return [pid, *(descendant for child in children for descendant in tree(int(child)))]


def each(pids: list[int], measure) -> list[float]:
    """``measure`` of every process still there (a worker may just have ended)."""
    found = []
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            found.append(measure(pid))
    return found


class JournalTail:
    """The write times the run's journal records as it grows (read from where it was left)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path: Path | None = None
        self.offset = 0
        self.pending = b""
        self.write_ms: list[tuple[float, float]] = []
        """(wall, CPU) ms of each write read since the last :meth:`take`."""

    def poll(self) -> None:
        if self.path is None:
            self.path = next(self.folder.glob("*.journal"), None)
            if self.path is None:
                return
        with contextlib.suppress(FileNotFoundError), self.path.open("rb") as journal:
            journal.seek(self.offset)
            data = journal.read()
            self.offset += len(data)
            *lines, self.pending = (self.pending + data).split(b"\n")
            for line in lines:
                record = json.loads(line)
                if "writeMs" in record:
                    self.write_ms.append((record["writeMs"], record["writeCpuMs"]))

    def take(self) -> list[tuple[float, float]]:
        taken, self.write_ms = self.write_ms, []
        return taken


def spread(name: str, values: list[float]) -> dict[str, float | None]:
    """Median and max of ``values`` (None for none) as ``<name>_median`` and ``<name>_max``."""
    return {
        f"{name}_median": round(statistics.median(values), 2) if values else None,
        f"{name}_max": round(max(values), 2) if values else None,
    }


class Sampler:
    """Each call: memory and descriptors now, CPU % and journal write times since the last."""

    def __init__(self, pid: int, broker_pid: int, journal: JournalTail) -> None:
        self.pid, self.broker_pid, self.journal = pid, broker_pid, journal
        self.started = self.last = time.monotonic()
        self.cpu: dict[int, float] = {}
        self.spent(tree(broker_pid))

    def spent(self, pids: list[int]) -> float:
        """CPU seconds ``pids`` used since they were last asked about (a process that ended
        in between takes its last stretch with it)."""
        total = 0.0
        for pid in pids:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                now = cpu_s(pid)
                total += now - self.cpu.get(pid, 0.0)
                self.cpu[pid] = now
        return total

    def __call__(self) -> dict[str, Any]:
        now = time.monotonic()
        pids = tree(self.pid)
        broker = tree(self.broker_pid)  # rabbitmq-server is a script: the node is its child
        share = [round(100 * self.spent(group) / (now - self.last)) for group in (pids, broker)]
        self.last = now
        pids = [pid for pid in pids if each([pid], rss_mb)]  # the ones still running
        rss, descriptors = each(pids, rss_mb), each(pids, fds)
        self.journal.poll()
        writes = self.journal.take()
        return {
            "minute": round((now - self.started) / 60, 2),
            "processes": len(pids),
            "loadgen_rss_mb": round(sum(rss), 1),
            "rss_mb_by_process": [round(value, 1) for value in rss],
            "loadgen_fds": sum(descriptors),
            "fds_by_process": descriptors,
            "loadgen_cpu_pct": share[0],
            "journal_writes": len(writes),
            **spread("journal_write_ms", [wall for wall, _ in writes]),
            **spread("journal_write_cpu_ms", [cpu for _, cpu in writes]),
            "broker_rss_mb": round(sum(each(broker, rss_mb)), 1),
            "broker_cpu_pct": share[1],
        }


COLUMNS = (
    ("minute", "minute"),
    ("processes", "processes"),
    ("loadgen RSS MB (sum)", "loadgen_rss_mb"),
    ("RSS MB by process", "rss_mb_by_process"),
    ("fds (sum)", "loadgen_fds"),
    ("fds by process", "fds_by_process"),
    ("loadgen CPU %", "loadgen_cpu_pct"),
    ("journal writes", "journal_writes"),
    ("journal write ms p50", "journal_write_ms_median"),
    ("journal write ms max", "journal_write_ms_max"),
    ("journal CPU ms p50", "journal_write_cpu_ms_median"),
    ("journal CPU ms max", "journal_write_cpu_ms_max"),
    ("broker RSS MB", "broker_rss_mb"),
    ("broker CPU %", "broker_cpu_pct"),
)


def markdown(samples: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, list):
            return " / ".join(str(item) for item in value)
        return "—" if value is None else str(value)

    lines = ["| " + " | ".join(head for head, _ in COLUMNS) + " |"]
    lines.append("|" + "---|" * len(COLUMNS))
    lines += ["| " + " | ".join(cell(s[key]) for _, key in COLUMNS) + " |" for s in samples]
    return "\n".join(lines)


def files(folder: Path, broker: LocalBroker, args: argparse.Namespace) -> tuple[Path, Path]:
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
    driver = {"name": broker.kind.title(), "driver": broker.kind, **broker.driver_config}
    if broker.kind == "kafka":
        for section, extra in (
            ("producerConfig", args.producer),
            ("consumerConfig", args.consumer),
        ):
            driver[section] += "".join(f"\n{line}" for line in extra)
    (folder / "soak.yaml").write_text(yaml.safe_dump(workload))
    (folder / "driver.yaml").write_text(yaml.safe_dump(driver))
    return folder / "soak.yaml", folder / "driver.yaml"


def topics_left(broker: LocalBroker) -> list[str] | None:
    """The run's topics still on the broker: tansu only (pulsar-lite has no admin API)."""
    if broker.kind != "kafka":
        return None
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.address})
    names = admin.list_topics(timeout=10).topics
    return sorted(name for name in names if name.startswith("test-topic"))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", choices=("kafka", "rabbitmq", "pulsar"), default="kafka")
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--processes", type=int, default=None, help="loadgen run --processes")
    parser.add_argument("--stats-interval", default="10s", help="loadgen run --stats-interval")
    parser.add_argument("--sample-s", type=float, default=60)
    parser.add_argument("--rss-bound-mb", type=float, default=20)
    parser.add_argument("--rss-from-minute", type=float, default=5)
    parser.add_argument("--fd-bound", type=int, default=0)
    parser.add_argument("--producer", action="append", default=[], help="kafka: key=value")
    parser.add_argument("--consumer", action="append", default=[], help="kafka: key=value")
    return parser.parse_args()


def growth(
    samples: list[dict[str, Any]], from_minute: float, measured_minutes: float
) -> tuple[float, float]:
    """RSS (MB) and descriptor growth from ``from_minute`` to the last sample of the run's
    measurement: every worker up, intervals still being journaled, and within its length (with
    one process the sample just after the measurement ended falls in the result's build, which
    still journaled most of that minute: the hour's first run counted +72 MB that way)."""
    workers_up = max(s["processes"] for s in samples)
    running = [
        s
        for s in samples
        if s["processes"] == workers_up and s["journal_writes"] and s["minute"] <= measured_minutes
    ]
    later = [s for s in running if s["minute"] >= from_minute]
    if len(later) < 2:
        raise SystemExit(f"fewer than two samples from minute {from_minute}: run longer")
    first, last = later[0], later[-1]
    return last["loadgen_rss_mb"] - first["loadgen_rss_mb"], last["loadgen_fds"] - first[
        "loadgen_fds"
    ]


def main() -> int:
    args = arguments()
    broker = launcher.start(args.broker)
    folder = Path(tempfile.mkdtemp(prefix=f"loadgen-soak-{os.getpid()}-"))
    workload, driver = files(folder, broker, args)
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload)]
    command += ["-o", str(folder / "out"), "--stats-interval", args.stats_interval, "--plain"]
    if args.processes is not None:
        command += ["--processes", str(args.processes)]
    samples = []
    child: subprocess.Popen[bytes] | None = None
    try:
        console = folder / "console.log"
        with console.open("wb") as out:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        journal = JournalTail(folder / "out")
        sample = Sampler(child.pid, broker.pid, journal)
        next_sample = sample.started + 5
        while child.poll() is None:
            journal.poll()  # often: the journal goes when the run ends
            if time.monotonic() >= next_sample:
                samples.append(sample())
                print(json.dumps(samples[-1]), flush=True)
                next_sample += args.sample_s
            time.sleep(0.5)
        output = console.read_text(errors="replace")
        results = list((folder / "out").glob("*.json"))
        result = json.loads(results[0].read_text()) if results else {}
        left = topics_left(broker)
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        broker.stop()
    rss_growth, fd_growth = growth(samples, args.rss_from_minute, args.minutes)
    rates = result.get("publishRate") or [0]
    mean_rate = statistics.fmean(rates)
    print(output[-1500:])
    print(markdown(samples))
    summary = {
        "command": " ".join(command[1:]),
        "exit": child.returncode,
        "sent": result.get("totalMessagesSent"),
        "received": result.get("totalMessagesReceived"),
        "lost": result.get("totalLost"),
        "duplicates": result.get("totalDuplicates"),
        "mean_publish_rate": round(mean_rate, 1),
        "kept_up": mean_rate >= 0.95 * args.rate,
        "e2e_p99_ms": result.get("aggregatedEndToEndLatency99pct"),
        f"loadgen_rss_growth_mb_from_minute_{args.rss_from_minute:g}": round(rss_growth, 1),
        "loadgen_fd_growth": fd_growth,
        "topics_left": left,
        "files_in": str(folder),
    }
    print(json.dumps(summary, indent=2))
    bounded = rss_growth <= args.rss_bound_mb and fd_growth <= args.fd_bound
    healthy = child.returncode == 0 and not result.get("totalLost") and summary["kept_up"]
    return 0 if bounded and healthy and not left else 1


if __name__ == "__main__":
    sys.exit(main())
