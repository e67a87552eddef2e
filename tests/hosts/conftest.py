"""Runs over simulated hosts: a `loadgen worker` in a network namespace of its own per host,
brokers on the bridge address, the coordinator (`loadgen run --workers`) in the root namespace.

One bridge with two hosts per module, and one broker per kind on it (started on first use).
Without root or network namespaces every test here skips with the reason (fails under
``LOADGEN_REQUIRE_BROKERS=1``).
"""

import json
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from harness.hosts import Host, hosts_unavailable, simulated_hosts
from loadgen.distributed.spawn import (
    START_TIMEOUT_S,
    announced_url,
    start_worker_process,
    stop_worker_processes,
)
from loadgen.pytest_plugin.fixtures import start_local_broker
from loadgen.pytest_plugin.require import unavailable
from loadgen.spec import load_yaml

WORKLOADS = Path(__file__).resolve().parents[2] / "configs/workloads"
WORKLOAD = load_yaml(WORKLOADS / "1-topic-16-partitions-1kb-10k.yaml") | {
    "name": "two hosts",
    "partitionsPerTopic": 4,
    "producerRate": 2000,
}
"""OMB's classic case, slower: one producer (on the first host, OMB's split) and one consumer
(on the second); runs give their own duration and no warm-up."""


@pytest.fixture(scope="module")
def network():
    reason = hosts_unavailable()
    if reason:
        unavailable(reason)
    with simulated_hosts(2) as made:
        yield made


@pytest.fixture(scope="module")
def bridge_broker(request, network):
    """``bridge_broker(kind)``: the module's broker of that kind, listening on the bridge."""
    started = {}

    def get(kind):
        if kind not in started:
            started[kind] = start_local_broker(request.config, kind, host=network.address)
        return started[kind]

    yield get
    for broker in started.values():
        broker.stop()


@pytest.fixture
def token():
    return secrets.token_urlsafe(16)


@pytest.fixture
def start_worker(token):
    """``start_worker(host, port=0)``: a worker process on that host; all stopped at the end."""
    started = []

    def start(host: Host, port: int = 0) -> subprocess.Popen:
        started.append(
            start_worker_process(token, bind=f"{host.address}:{port}", wrapper=host.command())
        )
        return started[-1]

    yield start
    stop_worker_processes(started)


@pytest.fixture
def worker_urls(network, start_worker):
    """A worker on each host, listening: their URLs (the first host's leads)."""
    processes = [start_worker(host) for host in network.hosts]
    deadline = time.monotonic() + START_TIMEOUT_S
    pairs = zip(processes, network.hosts, strict=True)
    return [announced_url(process, deadline, host.namespace) for process, host in pairs]


class Coordinator:
    """``loadgen run`` in the root namespace; its output lines are stamped (monotonic) as they
    arrive, so a test can tell when something was reported."""

    def __init__(self, args: list[str], cwd) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loadgen", "run", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines = {"stdout": [], "stderr": []}
        self._readers = [
            threading.Thread(target=self._read, args=(name,), daemon=True) for name in self.lines
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str) -> None:
        for line in getattr(self.process, name):
            self.lines[name].append((time.monotonic(), line))

    def first(self, stream: str, text: str, timeout_s: float) -> float:
        """When the first line of ``stream`` containing ``text`` arrived (waits for it)."""
        deadline = time.monotonic() + timeout_s
        while True:
            ended = not any(reader.is_alive() for reader in self._readers)  # all output read
            for at, line in list(self.lines[stream]):
                if text in line:
                    return at
            if ended or time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} on {stream}:\n{self.text(stream)[-3000:]}")
            time.sleep(0.02)

    def finish(self, timeout_s: float) -> int:
        """Its exit code, once it ended and its output was read."""
        code = self.process.wait(timeout_s)
        for reader in self._readers:
            reader.join(10)
        return code

    def text(self, stream: str) -> str:
        return "".join(line for _, line in self.lines[stream])


@pytest.fixture
def coordinator(tmp_path, token):
    """``coordinator(kind, broker, urls, *options)``: a run of the two-host workload on that
    broker over those workers, writing its result to ``tmp_path/out``; killed if still running
    at the end."""
    started = []

    def start(kind, broker, urls, *options: str) -> Coordinator:
        driver = tmp_path / f"{kind}.yaml"
        driver.write_text(yaml.safe_dump({"name": kind, "driver": kind, **broker.driver_config}))
        workload = tmp_path / "workload.yaml"
        workload.write_text(yaml.safe_dump(WORKLOAD))
        args = [
            "--workers", ",".join(urls), "--token", token, "-d", str(driver), str(workload),
            "--warmup", "0", "--stats-interval", "1s", "--plain", "--no-report",
            "-o", str(tmp_path / "out"), *options,
        ]  # fmt: skip
        started.append(Coordinator(args, tmp_path))
        return started[-1]

    yield start
    for run in started:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()


@pytest.fixture
def result_of(tmp_path):
    """The one result the run wrote."""

    def read() -> dict:
        [result] = [json.loads(p.read_text()) for p in (tmp_path / "out").glob("*.json")]
        return result

    return read
