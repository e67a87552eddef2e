"""`loadgen worker` and `loadgen run --workers/--processes` as users run them: real processes."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_cli import loadgen  # the e2e modules' one way to run the CLI

from harness.timing import run_watched
from loadgen.distributed.client import RETRY_PAUSE_S
from loadgen.distributed.spawn import announced_url, start_worker_process, stop_worker_processes
from loadgen.driver_api.local.process import free_port

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
TOKEN = "t0ken-for-tests"
TWO_TOPICS = """\
name: two topics
topics: 2
partitionsPerTopic: 2
messageSize: 256
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 4000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def call(url, method="GET", body=None, token=TOKEN):
    """(status, JSON answer) of one request to a worker."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, {"text": text.decode(errors="replace")}


@pytest.fixture
def workers():
    """Start ``count`` token-protected workers; every one is stopped at the end."""
    started = []

    def start(count):
        processes = [start_worker_process(TOKEN) for _ in range(count)]
        started.extend(processes)
        deadline = time.monotonic() + 30
        return [(announced_url(p, deadline, "test worker"), p) for p in processes]

    yield start
    stop_worker_processes(started)


@pytest.fixture
def two_topics(tmp_path):
    path = tmp_path / "two-topics.yaml"
    path.write_text(TWO_TOPICS)
    return path


def test_every_request_needs_the_token(workers):
    [(url, _)] = workers(1)
    assert call(f"{url}/health", token=None)[0] == 401
    assert call(f"{url}/health", token="wrong")[0] == 401
    status, health = call(f"{url}/health")
    assert status == 200 and health["protocol"] >= 1 and health["busy"] is False


def test_malformed_or_premature_requests_are_refused_with_the_reason(workers):
    [(url, _)] = workers(1)
    status, answer = call(f"{url}/topics", "POST", {"count": "many", "partitions": 1})
    assert status == 400 and "count" in answer["message"] and answer["exitCode"] == 2
    status, answer = call(f"{url}/topics", "POST", {"count": 1, "partitions": 1})
    assert status == 422 and "POST /driver first" in answer["message"]


def test_oversized_bodies_are_refused(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "worker", "--bind", "127.0.0.1:0", "--max-body-mb", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = announced_url(process, time.monotonic() + 30, "test worker")
        status, _ = call(f"{url}/load/start", "POST", {"payloads": ["A" * 2_000_000]}, token=None)
        assert status == 413
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(10)


def test_binding_beyond_loopback_needs_a_token(tmp_path):
    done = loadgen("worker", "--bind", "0.0.0.0:0", cwd=tmp_path, env=_without_token())
    assert done.returncode == 2
    assert "--token" in done.stderr and "0.0.0.0" in done.stderr


def _without_token():
    return {key: value for key, value in os.environ.items() if key != "LOADGEN_TOKEN"}


def test_the_coordinator_names_the_worker_that_refuses_its_token(workers, two_topics, tmp_path):
    [(url, _)] = workers(1)
    done = loadgen(
        "run", "-d", MEMORY, two_topics, "--workers", url, "--token", "wrong", cwd=tmp_path
    )
    assert done.returncode == 2, done.stderr
    assert url in done.stderr and "401" in done.stderr


def test_workers_and_processes_together_are_refused(two_topics, tmp_path):
    done = loadgen(
        "run", "-d", MEMORY, two_topics, "--workers", "http://127.0.0.1:1", "--processes", "2",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "--processes" in done.stderr


def test_a_worker_that_does_not_answer_fails_within_10_s_naming_it(
    two_topics, tmp_path, silent, start_up
):
    url = f"http://127.0.0.1:{silent.port}"
    command = [sys.executable, "-m", "loadgen", "run", "-d", MEMORY, two_topics, "--workers", url]
    done = run_watched(command, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert url in done.stderr and "unreachable" in done.stderr
    # the 10-s deadline from the first request, then CPU work (not the CLI's start-up before)
    assert done.said("error: ") - silent.wait_for_request(0) < 10 + start_up


def test_a_worker_url_where_nothing_listens_fails_within_2_s_naming_it(two_topics, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # every attempt is refused
    command = [sys.executable, "-m", "loadgen", "run", "-d", MEMORY, two_topics, "--workers", url]
    done = run_watched(command, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"worker {url}: unreachable: GET /health: connection refused" in done.stderr
    assert "--workers-wait" in done.stderr  # what to do about a worker still starting
    assert done.said("error: ") - done.said("== ") < 2  # from the run's header line


def test_workers_wait_is_how_long_a_worker_may_take_to_answer_first(two_topics, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # every attempt is refused: retried for 2 s
    command = [sys.executable, "-m", "loadgen", "run", "-d", MEMORY, two_topics, "--workers", url]
    started = time.monotonic()
    done = run_watched([*command, "--workers-wait", "2s"], cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert f"worker {url}: unreachable: GET /health: connection refused" in done.stderr
    # retried until less than two pauses were left (not given up at the first refusal)
    assert done.said("error: ") - done.said("== ") > 2 - 2 * RETRY_PAUSE_S
    assert took < 8  # not the default 10 s
    done = loadgen(
        "run", "-d", MEMORY, two_topics, "--workers", url, "--workers-wait", "soon", cwd=tmp_path
    )
    assert done.returncode == 2 and "--workers-wait" in done.stderr


def test_processes_split_topics_and_the_result_adds_up(two_topics, tmp_path):
    done = loadgen(
        "run", "-d", MEMORY, two_topics, "--processes", "2", "--duration", "3s",
        "--stats-interval", "1s", "--quiet", "--no-report", "-o", tmp_path, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [result] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    run = result["run"]
    assert len(run["workers"]) == 2 and run["split"] == "topics"
    assert set(run["workerRoles"].values()) == {"producer+consumer"}
    per_worker = run["workerTotals"].values()
    assert result["totalMessagesSent"] == sum(t["sent"] for t in per_worker) > 10_000
    assert result["totalMessagesReceived"] == sum(t["received"] for t in per_worker)
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert run["e2eClockSkewBoundMs"] == 0.0  # each topic's producer and consumer share a worker


def test_the_result_lists_each_workers_own_recorder_engine(two_topics, tmp_path):
    """One worker records in pure Python (``LOADGEN_PURE_PYTHON=1``), the other with the engine
    this install built: ``run.recorderEngines`` names each, whatever the coordinator runs."""
    built = "c" if importlib.util.find_spec("loadgen.engine._hotpath") else "python"
    processes = [
        start_worker_process(TOKEN, extra_env={"LOADGEN_PURE_PYTHON": pure}) for pure in ("1", "0")
    ]
    try:
        deadline = time.monotonic() + 30
        urls = [announced_url(process, deadline, "test worker") for process in processes]
        done = loadgen(
            "run", "-d", MEMORY, two_topics, "--workers", ",".join(urls), "--token", TOKEN,
            "--duration", "1s", "--stats-interval", "1s", "--quiet", "--no-report",
            "-o", tmp_path, cwd=tmp_path, env=os.environ | {"LOADGEN_PURE_PYTHON": "1"},
        )  # fmt: skip
    finally:
        stop_worker_processes(processes)
    assert done.returncode == 0, done.stderr
    [result] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert result["run"]["recorderEngine"] == "python"  # the coordinator's own
    assert result["run"]["recorderEngines"] == {urls[0]: "python", urls[1]: built}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs")
def test_with_cpus_each_local_worker_process_is_pinned_to_one(two_topics, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    done = loadgen(
        "run", "-d", MEMORY, two_topics, "--processes", "2", "--cpus", f"{cpus[0]},{cpus[1]}",
        "--duration", "1s", "--stats-interval", "1s", "--quiet", "--no-report", "-o", tmp_path,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [result] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    pinned = [result["run"]["workerCpuAffinity"][url] for url in result["run"]["workers"]]
    assert pinned == [[cpus[0]], [cpus[1]]]


def test_a_worker_lost_mid_run_ends_the_run_with_a_partial_result(workers, two_topics, tmp_path):
    (first, _), (second, doomed) = workers(2)
    command = [sys.executable, "-m", "loadgen", "run", "-d", MEMORY, two_topics, "--workers"]
    run = subprocess.Popen(
        [*command, f"{first},{second}", "--token", TOKEN, "--duration", "30s",
         "--stats-interval", "1s", "--plain", "--no-report", "-o", tmp_path],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _wait_for_measuring(run)
        doomed.kill()
        _, stderr = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 1, stderr
    assert second in stderr and "lost" in stderr
    [result] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert result["incomplete"] is True and result["stopReason"] == "worker-lost"
    assert second in result["run"]["lostWorkers"]
    assert result["totalMessagesSent"] > 0


def _wait_for_measuring(run):
    """Until the run printed two measured intervals (--plain lines on stdout)."""
    seen = 0
    deadline = time.monotonic() + 60
    while seen < 2 and time.monotonic() < deadline:
        line = run.stdout.readline()
        if not line:
            raise AssertionError("the run ended before it measured")
        seen += line.startswith("[measure]")
    assert seen == 2
