"""Brokers that are not there, or stall: clear errors, bounded waits, and Ctrl-C/SIGTERM honoured
within 5 s in every phase of a run, with what was measured kept.

A stall is a :class:`~harness.proxy.TcpProxy` in front of the plugin's Kafka broker (tansu, or
Apache Kafka with ``--loadgen-upstream``) that stops moving bytes while every connection stays
open (the broker advertises the proxy's address, so the clients' every connection goes
through it).
"""

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from harness.proxy import TcpProxy
from harness.timing import run_watched
from loadgen.driver_api.local.process import free_port
from loadgen.pytest_plugin.fixtures import start_local_broker
from loadgen.running.lifecycle import SILENT_BROKER_TEARDOWN_S
from loadgen_drivers.kafka.local.tansu import SESSION_OUTLASTING_AN_OUTAGE

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
STOP_WITHIN_S = 5.0
REFUSED_WITHIN_S = 2.0
WORKLOAD = {
    "name": "stall",
    "topics": 1,
    "partitionsPerTopic": 2,
    "messageSize": 256,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 500,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}


class Run:
    """``loadgen run --json-lines`` as a child process, its records read as they come."""

    def __init__(self, tmp_path, driver, *options, workload=None, study=()):
        """``loadgen run`` of ``driver.yaml`` and ``workload.yaml`` (written to ``tmp_path``), or
        the ``study`` given (``sweep ...``, ``matrix PLAN``), with ``options``."""
        (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))
        (tmp_path / "workload.yaml").write_text(yaml.safe_dump({**WORKLOAD, **(workload or {})}))
        self.out = tmp_path / "out"
        files = ["-d", "driver.yaml", "workload.yaml", "--json-lines"]
        command = [sys.executable, "-m", "loadgen", *(study or ["run", *files]), "-o", "out"]
        command += ["--stats-interval", "1s", "--processes", "1", *options]
        self.started = time.monotonic()
        self.child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
        )
        self.records: list[dict] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.child.stderr), daemon=True).start()

    def _read(self):
        for line in self.child.stdout:
            if line.startswith("{"):
                self.records.append(json.loads(line))

    def wait_for(self, phase, intervals=0, timeout_s=60):
        """Until ``phase`` began (and ``intervals`` intervals were reported after it)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            seen = [r for r in self.records if r["type"] == "phase" and r["phase"] == phase]
            if seen:
                after = self.records[self.records.index(seen[0]) :]
                if sum(r["type"] == "interval" for r in after) >= intervals:
                    return
            assert self.child.poll() is None, "".join(self.stderr)
            time.sleep(0.02)
        self.fail(f"no {phase} phase within {timeout_s} s: {self.records}")

    def fail(self, message):
        self.child.kill()  # never left running
        pytest.fail(message)

    def wait_until(self, condition, what, timeout_s=30):
        """Until ``condition()`` holds, with the child still running."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert self.child.poll() is None, "".join(self.stderr)
            if time.monotonic() > deadline:
                self.fail(f"no {what} within {timeout_s} s")
            time.sleep(0.02)

    def stop(self, signum):
        """Send ``signum``; return the seconds until the process exited."""
        sent = time.monotonic()
        self.child.send_signal(signum)
        try:
            self.child.wait(60)
        finally:
            self.child.kill()  # a no-op once it exited
        return time.monotonic() - sent

    def finish(self, timeout_s):
        self.child.wait(timeout_s)
        return time.monotonic() - self.started

    def result(self, pattern="*.json"):
        [path] = self.out.glob(pattern)
        return json.loads(path.read_text())


@pytest.fixture(scope="module")
def kafka_behind_proxy(request):
    """The plugin's Kafka broker, its own for the module, behind a proxy (it advertises the
    proxy's address): (proxy, driver file contents)."""
    port = free_port()
    with TcpProxy(port) as proxy:
        options = {"port": port, "advertised_port": proxy.port}
        broker = start_local_broker(request.config, "kafka", **options)
        try:
            config = {**broker.driver_config, "commonConfig": f"bootstrap.servers={proxy.address}"}
            # tansu's 2-s group session would lapse in a stall; Apache Kafka's 45-s one outlasts it
            if not broker.server:
                config["consumerConfig"] += SESSION_OUTLASTING_AN_OUTAGE
            yield proxy, {"name": "Kafka", "driver": "kafka", **config}
        finally:
            broker.stop()


@pytest.fixture(scope="module")
def rabbitmq_behind_proxy(rabbitmq_broker):
    """The session's RabbitMQ node behind a proxy: AMQP clients connect where they are told."""
    port = int(rabbitmq_broker.address.rsplit(":", 1)[1])
    with TcpProxy(port) as proxy:
        uri = f"amqp://guest:guest@{proxy.address}/%2F"
        config = {**rabbitmq_broker.driver_config, "amqpUris": [uri]}
        yield proxy, {"name": "RabbitMQ", "driver": "rabbitmq", **config}


@pytest.fixture
def stalled_kafka(kafka_behind_proxy):
    """The module's tansu and proxy, flowing at the start of the test and after it."""
    proxy, driver = kafka_behind_proxy
    proxy.thaw()
    yield proxy, driver
    proxy.thaw()


@pytest.fixture(params=["kafka", "rabbitmq"])
def stalled_broker(request):
    """Each broker kind that can be stalled behind a proxy, flowing at the start of the test."""
    proxy, driver = request.getfixturevalue(f"{request.param}_behind_proxy")
    proxy.thaw()
    yield proxy, driver
    proxy.thaw()


@pytest.mark.parametrize(
    "driver",
    [
        {
            "driver": "kafka",
            "commonConfig": "bootstrap.servers={address}",
            "producerConfig": "acks=all",
            "consumerConfig": "auto.offset.reset=earliest",
        },
        {"driver": "pulsar", "client": {"serviceUrl": "pulsar://{address}"}},
        {"driver": "rabbitmq", "amqpUris": ["amqp://guest:guest@{address}/%2F"]},
        {"driver": "pravega", "client": {"controllerURI": "tcp://{address}"}},
    ],
    ids=["kafka", "pulsar", "rabbitmq", "pravega"],
)
def test_an_unreachable_broker_exits_3_at_once_naming_the_address(tmp_path, driver):
    """A refused connection is reported within 2 s, timed from the run's header line: the
    interpreter's start-up before it is not the broker's time."""
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    filled = json.loads(json.dumps(driver).replace("{address}", address))
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump({"name": "unreachable", **filled}))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    command = [sys.executable, "-m", "loadgen", "run", "-d", "driver.yaml", "workload.yaml"]
    options = ["--duration", "5s", "--processes", "1", "-o", "out"]
    done = run_watched([*command, *options], cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.said("error: ") - done.said("== ") < REFUSED_WITHIN_S
    assert address in done.stderr and "connection refused" in done.stderr
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.glob("out/*.json"))


def test_a_stall_that_ends_is_one_outage_and_loses_nothing(tmp_path, stalled_kafka):
    proxy, driver = stalled_kafka
    run = Run(tmp_path, driver, "--duration", "9s")
    run.wait_for("measure", intervals=3)
    proxy.freeze()
    frozen = time.time()
    time.sleep(3)
    proxy.thaw()
    run.finish(60)
    assert run.child.returncode == 0, "".join(run.stderr)
    result = run.result()
    [outage] = [o for o in result["outages"] if o["role"] == "publish"]
    assert outage["recovered"] and abs(outage["startMs"] / 1000 - frozen) < 1.0
    assert 2.5 <= outage["seconds"] <= 5.0
    assert result["aggregatedPublishFromIntendedLatencyMax"] >= 2500
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]


DRAIN_S = 3
"""The stalled run's drain: any bound shows the wait is bounded; the default's 10 s would only
lengthen the test."""


def test_a_stall_that_never_ends_still_ends_the_run_with_a_bounded_wait(tmp_path, stalled_kafka):
    proxy, driver = stalled_kafka
    run = Run(tmp_path, driver, "--duration", "4s", "--drain-timeout", f"{DRAIN_S}s")
    run.wait_for("measure", intervals=2)
    proxy.freeze()
    frozen_at = time.monotonic()
    run.finish(120)
    waited = time.monotonic() - frozen_at
    # the rest of the measurement (≤ 3 s), the drain, and teardown, which does not wait out
    # the admin timeout (30 s) of a broker that stopped answering; 5 s to write and exit
    assert waited < 3 + DRAIN_S + SILENT_BROKER_TEARDOWN_S + 5, waited
    result = run.result()
    assert run.child.returncode == 0, "".join(run.stderr)
    [outage] = [o for o in result["outages"] if o["role"] == "publish"]
    assert outage["recovered"] is False
    assert result["run"]["drain"]["unacknowledged"] > 0  # sent into the stall, never confirmed
    # unacknowledged messages are not counted as lost; those acknowledged just before the freeze
    # but not yet delivered are (acknowledged, never received): a few at most
    assert 0 <= result["totalLost"] <= 500
    assert "outage(s) during the run" in "".join(run.stderr)
    assert "(broker not answering); topics" in "".join(run.stderr)  # they may remain: said so


# -- Ctrl-C and SIGTERM in every phase --------------------------------------------------------
# Each test checks two bounds: what loadgen measured itself, from its signal handler to the
# result being written (run.stop, within the stop budget and 4 s), and the wall clock from
# send_signal to the process's exit (5 s; the interpreter's start-up is not in it, the child is
# already running). The phase is reached by the child's own --json-lines records, never a sleep.

STOPPED_WITHIN_S = 4.0


def assert_stopped_in_time(run, signum, phase, pattern="*.json") -> dict:
    """Stop ``run`` with ``signum``; check both bounds and the record; return the result."""
    wall = run.stop(signum)
    result = run.result(pattern)
    stopped = result["run"]["stop"]
    print(f"{phase}: {stopped} exit after {wall:.2f} s")  # the numbers, with pytest -s
    assert stopped["signal"] == signal.Signals(signum).name and stopped["phase"] == phase
    assert stopped["secondsToStop"] <= STOPPED_WITHIN_S
    assert wall < STOP_WITHIN_S, (wall, stopped)
    return result


def assert_interrupted(run, result) -> None:
    assert run.child.returncode == 130, "".join(run.stderr)
    assert result["incomplete"] is True and result["stopReason"] == "interrupted"


MEMORY_PHASES = [("warmup", 1, signal.SIGINT), ("measure", 1, signal.SIGTERM)]


@pytest.mark.parametrize("phase,intervals,signum", MEMORY_PHASES, ids=["warmup", "measure"])
def test_a_signal_in_warmup_or_measure_stops_in_time_keeping_the_result(
    tmp_path, phase, intervals, signum
):
    driver = yaml.safe_load(MEMORY.read_text())
    run = Run(tmp_path, driver, "--duration", "60s", "--warmup", "2s")
    run.wait_for(phase, intervals)
    result = assert_stopped_in_time(run, signum, phase)
    assert_interrupted(run, result)
    assert result["totalMessagesSent"] > 0


def test_a_signal_while_connecting_to_a_stalled_broker_stops_in_time(tmp_path, stalled_broker):
    proxy, driver = stalled_broker
    proxy.freeze()  # connections open, nothing answers: the run hangs in setup
    connected = proxy.connections
    run = Run(tmp_path, driver, "--duration", "10s")
    run.wait_for("setup")
    run.wait_until(lambda: proxy.connections > connected, "a connection to the broker")
    result = assert_stopped_in_time(run, signal.SIGTERM, "setup")
    assert_interrupted(run, result)
    assert result["totalMessagesSent"] == 0  # nothing was measured, and the result says so


@pytest.mark.parametrize("phase", ["drain", "teardown"])
def test_a_signal_while_draining_or_tearing_down_a_stalled_broker_stops_in_time(
    tmp_path, stalled_broker, phase
):
    proxy, driver = stalled_broker
    processes = "2" if phase == "drain" else "1"  # the coordinator and its workers, or one process
    run = Run(
        tmp_path, driver, "--duration", "2s", "--drain-timeout", "1s", "--processes", processes
    )
    run.wait_for("measure", intervals=1)
    proxy.freeze()  # the drain then waits for confirms, teardown for the broker
    run.wait_for(phase)
    result = assert_stopped_in_time(run, signal.SIGINT, phase)
    assert result["totalMessagesSent"] > 0  # the measurement was over: its result is kept
    assert run.child.returncode in (0, 130), "".join(run.stderr)


CATCH_UP = {
    "subscriptionsPerTopic": 2,
    "tailingSubscriptionsPerTopic": 1,
    "consumerBacklogSizeGB": 1.0,  # never reached at 500 msg/s: the run is building when stopped
}


def test_a_signal_while_building_a_backlog_on_a_stalled_broker_stops_in_time(
    tmp_path, stalled_broker
):
    proxy, driver = stalled_broker
    run = Run(tmp_path, driver, "--duration", "10s", workload=CATCH_UP)
    run.wait_for("catch-up", intervals=1)
    proxy.freeze()
    result = assert_stopped_in_time(run, signal.SIGINT, "catch-up")
    assert_interrupted(run, result)
    assert result["catchUp"]["targetReached"] is False


def test_a_signal_in_a_sweep_step_stops_the_sweep_in_time_listing_the_runs_so_far(tmp_path):
    driver = yaml.safe_load(MEMORY.read_text())
    study = ["sweep", "-d", "driver.yaml", "workload.yaml", "--rates", "300,600", "-q"]
    run = Run(tmp_path, driver, "--duration", "60s", "--warmup", "0", study=study)
    run.wait_until(lambda: list(run.out.glob("*.journal")), "the first run's journal", 60)
    result = assert_stopped_in_time(run, signal.SIGTERM, "measure", "*rate-300*.json")
    assert_interrupted(run, result)
    summary = run.result("*-sweep-*.json")
    assert summary["incomplete"] is True
    assert [point["targetRate"] for point in summary["points"]] == [300]


def test_a_signal_in_a_matrix_step_stops_the_matrix_in_time_keeping_its_document(tmp_path):
    plan = {"name": "stop", "workload": "workload.yaml", "drivers": ["driver.yaml"]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan | {"matrix": {"producerRate": [300]}}))
    driver = yaml.safe_load(MEMORY.read_text())
    study = ["matrix", "plan.yaml", "-q"]
    run = Run(tmp_path, driver, "--duration", "60s", "--warmup", "0", study=study)
    run.wait_until(lambda: list(run.out.glob("*-r1-*.journal")), "the first run's journal", 60)
    result = assert_stopped_in_time(run, signal.SIGINT, "measure", "*-r1-*.json")
    assert_interrupted(run, result)
    [point] = run.result("*.matrix.json")["points"]
    assert point["status"] == "incomplete"
