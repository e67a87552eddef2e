"""`--metrics-port` as a user runs it: a real run scraped while it runs, checked against its result.

Scrapes are matched to the result's periods by ``loadgen_interval_index`` (warm-up intervals come
first) and to a worker's own intervals by ``loadgen_interval_end_timestamp_seconds``; counts and
percentiles must be equal, not close: they come from the same histograms. The last measured
interval is left out of the comparison: the result folds the drain (messages still arriving after
the producers stopped) into it, after it was published.
"""

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from test_cli import loadgen

from loadgen.base import hdr
from loadgen.distributed.spawn import announced_url, stop_worker_processes
from loadgen.engine.stats import END_TO_END, PUBLISH, PUBLISH_DELAY

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
TOKEN = "t0ken-for-metrics"
WORKLOAD = """\
name: scraped
topics: 2
partitionsPerTopic: 2
messageSize: 200
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 3000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""
WARMUP_INTERVALS = 2
MEASURED_INTERVALS = 5
RUN_FLAGS = (
    "--warmup", f"{WARMUP_INTERVALS}s", "--duration", f"{MEASURED_INTERVALS}s",
    "--stats-interval", "1s", "--plain", "--no-report",
)  # fmt: skip
LATENCIES = {
    PUBLISH: ("loadgen_producer_publish_latency_seconds", "publishLatency", 1000.0),
    PUBLISH_DELAY: ("loadgen_producer_publish_delay_seconds", "publishDelayLatency", None),
    END_TO_END: ("loadgen_consumer_e2e_latency_seconds", "endToEndLatency", 1000.0),
}
QUANTILES = {"0.5": ("50pct", 50.0), "0.95": ("95pct", 95.0), "0.99": ("99pct", 99.0)}
QUANTILES |= {"0.999": ("999pct", 99.9)}


class Scrape(dict):
    """One scrape: samples keyed by name, or by (name, quantile|metric|phase); plus labels."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.labels: dict[str, str] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                own = {
                    k: v for k, v in sample.labels.items() if k in ("quantile", "metric", "phase")
                }
                self[(sample.name, *own.values())] = sample.value
                self.labels = {k: v for k, v in sample.labels.items() if k not in own}

    def micros(self, name: str, quantile: str) -> int:
        return round(self[(name, quantile)] * 1e6)

    def interval_part(self) -> dict:
        """What describes the interval (the same in every scrape of it)."""
        keep = ("loadgen_interval_", *(name for name, _, _ in LATENCIES.values()))
        return {key: v for key, v in self.items() if key[0].startswith(keep)}


def get(url: str, token: str | None) -> str:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200
        return response.read().decode()


class Scraper:
    """Scrapes ``url`` every 0.1 s on a thread until stopped; keeps every successful scrape."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url, self.token = url, token
        self.scrapes: list[Scrape] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self.scrapes.append(Scrape(get(self.url, self.token)))
            except OSError:  # the run ended and its endpoint with it
                return

    def stop(self) -> list[Scrape]:
        self._stop.set()
        self._thread.join(10)
        return self.scrapes

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


def by_interval(scrapes: list[Scrape], key: str) -> dict[float, Scrape]:
    """One scrape per interval (by ``key``); every scrape of an interval must say the same."""
    seen: dict[float, Scrape] = {}
    for scrape in scrapes:
        if (key,) not in scrape:
            continue  # before the first interval
        first = seen.setdefault(scrape[(key,)], scrape)
        assert scrape.interval_part() == first.interval_part()
    return seen


def line_with(stream, prefix: str, deadline_s: float = 60) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        line = stream.readline()
        assert line, f"the process ended before printing {prefix!r}"
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    raise AssertionError(f"no {prefix!r} line within {deadline_s} s")


def start_run(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, str]:
    workload = tmp_path / "scraped.yaml"
    workload.write_text(WORKLOAD)
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(MEMORY), str(workload)]
    process = subprocess.Popen(
        [*command, *RUN_FLAGS, "-o", str(tmp_path / "out"), "--metrics-port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, line_with(process.stderr, "metrics: ")


def finish(process: subprocess.Popen, tmp_path: Path) -> dict:
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    [path] = (tmp_path / "out").glob("*.json")
    return json.loads(path.read_text())


def assert_closed(port: int) -> None:
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def assert_matches_period(scrape: Scrape, result: dict, period: int) -> None:
    """Everything the scrape says about its interval equals the result's period ``period``."""
    start_ms = round(scrape[("loadgen_interval_start_timestamp_seconds",)] * 1000)
    end_ms = round(scrape[("loadgen_interval_end_timestamp_seconds",)] * 1000)
    interval_s = max(end_ms - start_ms, 1) / 1000.0
    for scraped, field in [
        ("producer_messages_sent", "publishRate"),
        ("producer_message_send_errors", "publishErrorRate"),
        ("consumer_messages_recv", "consumeRate"),
    ]:
        count = scrape[(f"loadgen_interval_{scraped}",)]
        assert count / interval_s == result[field][period]
        assert scrape[(f"loadgen_interval_{scraped}_per_second",)] == result[field][period]
    assert scrape[("loadgen_consumer_backlog_messages",)] == result["backlog"][period]
    for metric, (name, omb, to_ms) in LATENCIES.items():
        histogram = hdr.decode(metric, result["histograms"][metric]["periods"][period])
        assert scrape[("loadgen_interval_latency_values", metric)] == histogram.total
        for quantile, (suffix, percentile) in QUANTILES.items():
            micros = scrape.micros(name, quantile)
            assert micros == hdr.value_at_percentile(histogram, percentile)
            assert result[f"{omb}{suffix}"][period] == (micros / to_ms if to_ms else micros)
        assert scrape.micros(name, "1") == histogram.max
    sent = result["histograms"][PUBLISH]["periods"][period]
    assert scrape[("loadgen_interval_producer_messages_sent",)] == hdr.decode(PUBLISH, sent).total


def hlog_interval(result_dir: Path, period: int) -> tuple[str, str, float]:
    """(start offset, length) of the period in the publish hlog, and the log's start (s)."""
    [log] = result_dir.glob("*.publish.hlog")
    lines = log.read_text().splitlines()
    start_s = float(next(line for line in lines if line.startswith("#[StartTime:")).split()[1])
    rows = [line for line in lines if line[:1].isdigit()]
    offset, length, *_ = rows[period].split(",")
    return offset, length, start_s


def test_a_run_scraped_while_running_agrees_with_its_result(tmp_path):
    process, url = start_run(tmp_path)
    scraper = Scraper(url)
    result = finish(process, tmp_path)
    scrapes = scraper.stop()
    assert_closed(scraper.port)

    intervals = by_interval(scrapes, "loadgen_interval_index")
    last = WARMUP_INTERVALS + MEASURED_INTERVALS - 1
    assert set(range(last)) <= set(intervals), f"scraped intervals {sorted(intervals)}"
    assert len(scrapes) >= 20
    phases = {key[1] for s in scrapes for key in s if key[0] == "loadgen_run_phase" and s[key]}
    assert {"warmup", "measure"} <= phases
    for index in range(last):
        scrape = intervals[index]
        assert scrape.labels == {
            "role": "coordinator",
            "worker": "all",
            "run_id": result["run"]["runId"],
            "workload": "scraped",
            "driver": "Memory",
        }
        assert scrape[("loadgen_interval_warmup",)] == (index < WARMUP_INTERVALS)
        if index < WARMUP_INTERVALS:
            continue
        period = index - WARMUP_INTERVALS
        assert_matches_period(scrape, result, period)
        offset, length, log_start_s = hlog_interval(tmp_path / "out", period)
        start_ms = round(scrape[("loadgen_interval_start_timestamp_seconds",)] * 1000)
        end_ms = round(scrape[("loadgen_interval_end_timestamp_seconds",)] * 1000)
        assert offset == f"{(start_ms - round(log_start_s * 1000)) / 1000:.3f}"
        assert length == f"{(end_ms - start_ms) / 1000:.3f}"
    # running totals are the sum of every interval so far, warm-up included
    newest = int(max(intervals))
    sent = sum(
        intervals[i][("loadgen_interval_producer_messages_sent",)] for i in range(newest + 1)
    )
    assert intervals[newest][("loadgen_producer_messages_sent_total",)] == sent
    assert sent <= result["totalMessagesSent"]


def test_a_metrics_port_in_use_fails_at_once_naming_host_and_port(tmp_path):
    workload = tmp_path / "scraped.yaml"
    workload.write_text(WORKLOAD)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        started = time.monotonic()
        done = loadgen(
            "run", "-d", MEMORY, workload, *RUN_FLAGS, "-o", tmp_path / "out",
            "--metrics-port", str(port), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"127.0.0.1:{port}" in done.stderr and "--metrics-port" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 15
    assert not list((tmp_path / "out").iterdir())  # checked writable before: nothing written


def test_a_sweep_serves_each_of_its_runs_in_turn_on_one_endpoint(tmp_path):
    workload = tmp_path / "scraped.yaml"
    workload.write_text(WORKLOAD)
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "sweep", "-d", str(MEMORY), str(workload),
         "--rates", "1k,2k", "--warmup", "0s", "--duration", "3s", "--stats-interval", "1s",
         "--plain", "--no-report", "-o", str(tmp_path / "out"), "--metrics-port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    scraper = Scraper(line_with(process.stderr, "metrics: "))
    _, errors = process.communicate(timeout=120)
    assert process.returncode == 0, errors
    scrapes = scraper.stop()
    assert_closed(scraper.port)

    runs = [path for path in (tmp_path / "out").glob("*.json") if "-sweep-" not in path.name]
    run_ids = {json.loads(path.read_text())["run"]["runId"] for path in runs}
    assert len(run_ids) == 2
    assert {scrape.labels.get("run_id") for scrape in scrapes} - {None} == run_ids
    assert {scrape.labels["role"] for scrape in scrapes} == {"coordinator"}


def start_worker() -> tuple[subprocess.Popen, str, str]:
    """A `loadgen worker` with a metrics endpoint: (process, worker URL, metrics URL)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "worker", "--bind", "127.0.0.1:0", "--token", TOKEN,
         "--metrics-port", "0", "--exit-with-stdin"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    metrics = line_with(process.stderr, "loadgen worker metrics on ")
    return process, announced_url(process, time.monotonic() + 30, "test worker"), metrics


@pytest.fixture
def two_workers():
    started = []
    try:
        for _ in range(2):
            started.append(start_worker())
        yield started[0][1:], started[1][1:]
    finally:
        processes = [process for process, _, _ in started]
        stop_worker_processes(processes)
        for process in processes:
            process.stderr.close()


def test_workers_serve_their_own_intervals_which_add_up_to_the_merged_ones(tmp_path, two_workers):
    urls = [url for url, _ in two_workers]
    process, url = start_run(tmp_path, "--workers", ",".join(urls), "--token", TOKEN)
    coordinator = Scraper(url, TOKEN)
    workers = [Scraper(metrics, TOKEN) for _, metrics in two_workers]
    result = finish(process, tmp_path)
    merged = by_interval(coordinator.stop(), "loadgen_interval_end_timestamp_seconds")
    after = [Scrape(get(metrics, TOKEN)) for _, metrics in two_workers]
    own = [by_interval(w.stop(), "loadgen_interval_end_timestamp_seconds") for w in workers]
    assert_closed(coordinator.port)

    for (worker_url, _), scrape in zip(two_workers, after, strict=True):
        assert scrape.labels == {"role": "worker", "worker": worker_url, "driver": "Memory"}
        assert scrape[("loadgen_run_active",)] == 0 and scrape[("loadgen_run_phase", "idle")] == 1
    compared = 0
    for end, scrape in merged.items():
        index = int(scrape[("loadgen_interval_index",)])
        period = index - WARMUP_INTERVALS
        if period < 0 or period >= MEASURED_INTERVALS - 1 or not all(end in w for w in own):
            continue
        parts = [w[end] for w in own]
        for name in ("producer_messages_sent", "consumer_messages_recv", "producer_bytes_sent"):
            key = (f"loadgen_interval_{name}",)
            assert sum(part[key] for part in parts) == scrape[key]
        for metric, (name, _, _) in LATENCIES.items():
            values = ("loadgen_interval_latency_values", metric)
            assert sum(part[values] for part in parts) == scrape[values]
            assert max(part.micros(name, "1") for part in parts) == scrape.micros(name, "1")
            assert all(part[values] > 0 for part in parts)  # both workers worked
        assert_matches_period(scrape, result, period)
        compared += 1
    assert compared >= MEASURED_INTERVALS - 2, f"matched {compared} intervals"
