"""Pravega itself as a local broker, and loadgen's Pravega driver on it: `loadgen brokers up
pravega --upstream`, a run with the driver file it prints, then `down`; tailing with and
without routing keys, catch-up, transactions and a stream that scales up mid-run, each with
exact counts from loadgen's accounting.

Needs Java 17 and Pravega standalone's jars (Maven Central once, then the cache; or
$PRAVEGA_HOME): the `upstream` step of .ci/run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import env, pids_of, run_exact
from tests.upstream.test_kafka_upstream_cli import loadgen as loadgen_cli

import loadgen
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import LocalBroker, free_port, process_alive
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload
from loadgen_drivers.pravega.events import clean_name
from loadgen_drivers.pravega.local.distribution import PRAVEGA_VERSION
from loadgen_drivers.pravega.local.upstream import start_upstream_pravega
from loadgen_drivers.pravega.transactions import LEASE_S

pytestmark = [pytest.mark.upstream, pytest.mark.usefixtures("pravega_can_start")]
__all__ = ["env"]  # the fixture, used by name

OMB_WORKLOAD = dict(
    name="pravega upstream", topics=1, partitionsPerTopic=4, messageSize=1024,
    keyDistributor="RANDOM_NANO", producersPerTopic=1, producerRate=2000,
    subscriptionsPerTopic=1, consumerPerSubscription=2, testDurationMinutes=1,
)  # fmt: skip
"""OMB's 1 KiB workload shape, at 2k msg/s."""
OMB_PRAVEGA = Path(__file__).parents[2] / "configs" / "drivers" / "pravega.yaml"
SCALE_RUN_S = 150
"""A stream's segment reports its event rate first two minutes after it was made (hard-coded
in Pravega 0.13's segment store); the split came 2 min 7 s after the stream was made (the
segment store's first scale request starts its request-stream writer, ~6 s), so the run
writes on for ~20 s into the successors."""
SCALE_TARGET = 20
"""Events/s per segment the stream is told to hold: 200 msg/s on one segment is ten times it,
past the five times a segment's two-minute rate must exceed to be split."""


@pytest.fixture(scope="module")
def broker():
    started = start_upstream_pravega()
    yield started
    started.stop()


def rest(rest_url: str, path: str) -> Any:
    with urllib.request.urlopen(f"{rest_url}{path}", timeout=10) as answer:
        return json.load(answer)


def scopes(rest_url: str) -> list[str]:
    return [scope["scopeName"] for scope in rest(rest_url, "/scopes")["scopes"]]


def driver_spec(
    broker: LocalBroker, client_settings: dict[str, Any] | None = None, **settings: Any
) -> DriverSpec:
    """The broker's driver section in a scope of the test's own."""
    scope = {"scopeName": f"lg-{uuid.uuid4().hex[:8]}"}
    client = {**broker.driver_config["client"], **scope, **(client_settings or {})}
    config = {**broker.driver_config, "client": client, **settings}
    return DriverSpec("Pravega", "pravega", config, "pravega upstream")


def workload(seconds: float, **changes: Any) -> Workload:
    fields = {**OMB_WORKLOAD, "testDurationMinutes": seconds / 60, "warmupDurationMinutes": 0}
    return loadgen.workload(**{**fields, **changes})


def run(
    chosen: Workload,
    spec: DriverSpec,
    out: Path,
    processes: int = 1,
    listeners: tuple[Any, ...] = (),
    **options: Any,
) -> dict[str, Any]:
    options = RunOptions(stats_interval_s=1, **options)
    placement = Placement(processes=processes)
    request = RunRequest(
        chosen, spec, options, out_dir=out, placement=placement, listeners=listeners
    )
    return run_one(request).result


def assert_exact(result: dict[str, Any], subscriptions: int = 1) -> None:
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == subscriptions * result["totalMessagesSent"]
    assert (result["totalLost"], result["totalDuplicates"]) == (0, 0)
    assert result["totalPublishErrors"] == 0


def run_omb_file_at(uri: str, tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """OMB's pravega.yaml with the printed controller URI, OMB's workload at 2k msg/s for 20 s,
    as a user runs them."""
    document = yaml.safe_load(OMB_PRAVEGA.read_text())
    document["client"]["controllerURI"] = uri
    driver_file = tmp_path / "pravega.yaml"
    driver_file.write_text(yaml.safe_dump(document))
    workload_file = tmp_path / "workload.yaml"
    workload_file.write_text(yaml.safe_dump(OMB_WORKLOAD))
    result = run_exact(
        driver_file, workload_file, tmp_path / "out", env, warmup="2s", duration="20s",
        interval="5s",
    )  # fmt: skip
    assert_exact(result)
    return result


def test_up_then_omb_pravega_yaml_at_the_printed_uri_is_exact_then_down_leaves_nothing(
    tmp_path, env
):
    port = free_port()
    up = loadgen_cli("brokers", "up", "pravega", "--upstream", "--port", port, env=env)
    pids: list[int] = []
    try:
        assert up.returncode == 0, up.stderr
        uri = f"tcp://127.0.0.1:{port}"
        assert f"pravega --upstream up at {uri} (Pravega {PRAVEGA_VERSION}" in up.stdout
        [rest_url] = re.findall(r"^controller REST API: (\S+)$", up.stdout, re.MULTILINE)
        [driver_file] = re.findall(r"^driver file: (.+)$", up.stdout, re.MULTILINE)
        assert yaml.safe_load(Path(driver_file).read_text())["client"]["controllerURI"] == uri
        pids = pids_of(Path(env["LOADGEN_STATE_DIR"]))
        assert len(pids) == 1
        result = run_omb_file_at(uri, tmp_path, env)
        assert result["totalMessagesSent"] >= 20 * 2000 * 0.99
        assert scopes(rest_url) == ["_system"]  # the run's streams, groups and scope: gone
    finally:
        down = loadgen_cli("brokers", "down", "pravega", env=env)
    assert down.returncode == 0 and "pravega --upstream stopped" in down.stdout
    assert not any(process_alive(pid) for pid in pids)
    assert loadgen_cli("brokers", "status", env=env).returncode == 1


@pytest.mark.parametrize("keys", ["RANDOM_NANO", "NO_KEY"])
def test_tailing_counts_exactly_with_and_without_routing_keys(broker, keys, tmp_path):
    spec = driver_spec(broker)
    result = run(workload(6, keyDistributor=keys), spec, tmp_path)
    assert_exact(result)
    assert result["verdicts"]["rate"]["held"], result["verdicts"]["rate"]
    assert spec.config["client"]["scopeName"] not in scopes(broker.endpoints["controller REST API"])


def test_a_catch_up_run_builds_and_drains_its_backlog_reading_every_event_twice(broker, tmp_path):
    chosen = workload(
        4,
        partitionsPerTopic=2,
        messageSize=512,
        subscriptionsPerTopic=2,
        tailingSubscriptionsPerTopic=1,
        consumerPerSubscription=1,
        consumerBacklogSizeGB=6000 * 512 / 1024**3,  # 6 000 events: 3 s at 2k msg/s
    )
    result = run(chosen, driver_spec(broker), tmp_path, catch_up_timeout_s=60)
    block = result["catchUp"]
    assert block["targetReached"] and block["drained"], block
    build = block["phases"]["build"]
    assert build["catchUpReadRate"] < 0.01 * build["publishRate"]  # the reader held still
    assert_exact(result, subscriptions=2)


def test_transactions_commit_every_event_once_and_readers_see_them_only_at_the_commit(
    broker, tmp_path
):
    """50 events a transaction at 100 msg/s: readers get an event only once its transaction
    has committed, so a transaction's first event reaches them ~0.5 s after it was sent."""
    spec = driver_spec(broker, enableTransaction=True, eventsPerTransaction=50)
    result = run(workload(6, producerRate=100, partitionsPerTopic=2), spec, tmp_path)
    assert_exact(result)
    assert result["aggregatedEndToEndLatency50pct"] > 150  # ~245 ms: half a transaction


def test_an_auto_scaling_stream_splits_mid_run_and_readers_follow_its_successors(broker, tmp_path):
    """Also, as the run begins, a writer opens a transaction on the stream, writes a loadgen
    event in it and is killed: the controller aborts the transaction once its 90-s lease runs
    out, within the run, and no reader ever sees the event."""
    spec = driver_spec(broker, enableStreamAutoScaling=True, eventsPerSecond=SCALE_TARGET)
    scope = spec.config["client"]["scopeName"]
    controller_uri = spec.config["client"]["controllerURI"]
    abandoned: list[tuple[int, float]] = []

    def abandon() -> None:
        abandoned.append(abandon_transaction(controller_uri, scope, "scaling"))

    writer = AfterMeasureStarts(0.0, abandon)
    chosen = workload(SCALE_RUN_S, producerRate=10 * SCALE_TARGET, partitionsPerTopic=1)
    result = run(chosen, spec, tmp_path, listeners=(writer,), topic_names=("scaling",))
    assert writer.done.wait(30)
    ended_ms = time.time() * 1000
    assert_exact(result)
    [(txn_id, begun_s)] = abandoned
    aborted = f"aborted transaction {uuid.UUID(int=txn_id)} on stream {scope}/scaling"
    assert LEASE_S - 1 <= logged_at(Path(broker.log_path), aborted) - begun_s <= LEASE_S + 15
    epochs = scaling_events(broker, scope, "scaling", ended_ms)
    assert len(epochs[0]["segments"]) == 1
    assert len(epochs[-1]["segments"]) >= 2 and epochs[-1]["splits"] >= 1, epochs
    assert epochs[1]["timestamp"] < ended_ms - 10_000  # successors written and read 10 s+
    [scaled] = result["topicScaling"]
    assert scaled["partitionsAtEnd"] == len(epochs[-1]["segments"])
    assert scaled["scalings"] == len(epochs) - 1 >= 1


def test_a_stream_rescaled_mid_run_is_read_exactly_across_its_successors_and_the_result_says_so(
    broker, tmp_path
):
    """An operator raises a fixed stream's segments from 2 to 5 through the controller's REST
    while a run over two worker processes writes and reads it: the controller seals the two and
    makes five successors at once, readers move on to them, and the result says so, from the
    worker process that created the stream (the auto-scaling test checks an in-process run's)."""
    processes = 2
    spec = driver_spec(broker)
    rest_url = broker.endpoints["controller REST API"]
    stream_path = f"/scopes/{spec.config['client']['scopeName']}/streams/rescaled"
    policy = {"scalingPolicy": {"type": "FIXED_NUM_SEGMENTS", "minSegments": 5}}
    operator = AfterMeasureStarts(RESCALE_AFTER_S, lambda: put(rest_url, stream_path, policy))
    chosen = workload(12, producerRate=500, partitionsPerTopic=2)
    result = run(chosen, spec, tmp_path, processes, (operator,), topic_names=("rescaled",))
    assert operator.done.wait(10)
    assert len(result["run"]["workers"]) == processes
    assert_exact(result)
    [scaled] = result["topicScaling"]
    assert scaled == {
        "topic": "rescaled", "partitionsCreated": 2, "partitionsAtEnd": 5, "scalings": 1
    }  # fmt: skip


RESCALE_AFTER_S = 4.0
"""Into the run's 12 measured seconds: events are written to both generations."""


def test_a_commit_held_up_by_a_stopped_server_is_waited_for_and_counted_as_it_ended(
    broker, tmp_path
):
    """The standalone stopped (SIGSTOP) for 8 s under transactions of 10 events with
    ``client.timeoutSeconds: 3``: the commit in flight is waited for past the 3 s (a commit cut
    off there could still land, and its events, reported failed, would be read all the same:
    before the fix, 10 of them were, and their count hid 10 late ones from the drain, called
    lost), commits once the server answers again, and the run is exact with no error."""
    spec = driver_spec(
        broker, {"timeoutSeconds": 3}, enableTransaction=True, eventsPerTransaction=10
    )

    def pause() -> None:
        os.kill(broker.pid, signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)
        finally:
            os.kill(broker.pid, signal.SIGCONT)

    pauser = AfterMeasureStarts(PAUSE_AFTER_S, pause)
    try:
        chosen = workload(20, producerRate=200, partitionsPerTopic=2, messageSize=256)
        result = run(chosen, spec, tmp_path, listeners=(pauser,))
    finally:
        pauser.done.wait(PAUSE_AFTER_S + PAUSE_S + 60)
        os.kill(broker.pid, signal.SIGCONT)
    assert_exact(result)
    [outage] = [o for o in result["outages"] if o["role"] == "publish"]
    assert outage["seconds"] >= PAUSE_S - 1 and outage["recovered"]
    assert result["aggregatedPublishLatencyMax"] >= (PAUSE_S - 1) * 1000  # ms: through it
    block = result["transactions"]
    assert block["committed"] >= result["totalMessagesSent"] // 10
    assert 1 < block["commitLatency"]["50pct"] < 1000  # ms: the controller's COMMITTING wait


PAUSE_AFTER_S = 4.0
PAUSE_S = 8.0


class AfterMeasureStarts:
    """A run listener that runs ``action`` on a thread of its own ``after_s`` into the
    measured phase; ``done`` is set once it returned."""

    def __init__(self, after_s: float, action: Callable[[], None]) -> None:
        self.after_s = after_s
        self.action = action
        self.done = threading.Event()

    def on_phase(self, phase: str, _seconds: float | None) -> None:
        if phase == "measure":
            threading.Thread(target=self._act, daemon=True).start()

    def on_interval(self, _stats: object, _backlog: int) -> None:
        """Intervals are not this listener's business."""

    def _act(self) -> None:
        time.sleep(self.after_s)
        try:
            self.action()
        finally:
            self.done.set()


def put(rest_url: str, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{rest_url}{path}", json.dumps(body).encode(), method="PUT",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200


ABANDON = """
import os, sys, time
import pravega_client
from loadgen_drivers.pravega.events import stamped
uri, scope, stream = sys.argv[1:]
manager = pravega_client.StreamManager(uri)  # kept: the writer dies with it
writer = manager.create_transaction_writer(scope, stream, 1)
txn = writer.begin_txn()
now = time.time_ns()
txn.write_event(stamped(now, 1 << 40, now, b"abandoned"), None)
print(txn.get_txn_id(), time.time(), flush=True)
os.kill(os.getpid(), 9)
"""
"""Opens a transaction holding one stamped event (producer 1's first message id: one the
accounting would count as received), then dies without a word to the controller."""


def abandon_transaction(uri: str, scope: str, stream: str) -> tuple[int, float]:
    """The transaction id and when it was begun (epoch seconds)."""
    script = [sys.executable, "-c", ABANDON, uri, scope, stream]
    died = subprocess.run(script, capture_output=True, text=True, timeout=60)
    assert died.returncode == -signal.SIGKILL, died.stderr
    txn_id, begun_s = died.stdout.split()
    return int(txn_id), float(begun_s)


def logged_at(log: Path, text: str) -> float:
    """When the server log's first line containing ``text`` was written (epoch seconds)."""
    [line, *_] = [line for line in log.read_text().splitlines() if text in line]
    stamp = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")  # the JVM's local time
    return stamp.timestamp()


def scaling_events(broker: LocalBroker, scope: str, topic: str, until_ms: float) -> list[dict]:
    """The stream's epochs as the controller's REST lists them: when each began, its
    segments, and how many splits made it."""
    path = f"/scopes/{scope}/streams/{clean_name(topic)}/scaling-events"
    return rest(broker.endpoints["controller REST API"], f"{path}?from=0&to={int(until_ms)}")
