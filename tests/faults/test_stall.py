"""Brokers that are not there, or stall: clear errors, bounded waits, and Ctrl-C/SIGTERM honoured
within 5 s in every phase of a run, with what was measured kept.

A stall is a :class:`~loadgen.testing.proxy.TcpProxy` in front of tansu that stops moving bytes
while every connection stays open (tansu advertises the proxy's address, so the clients' every
connection goes through it).
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

from loadgen.errors import LoadgenError, MissingExtra
from loadgen.scenarios.tailing import SILENT_BROKER_TEARDOWN_S
from loadgen.testing.process import free_port
from loadgen.testing.proxy import TcpProxy
from loadgen.testing.require import unavailable
from loadgen.testing.tansu import SESSION_OUTLASTING_AN_OUTAGE, start_tansu, tansu_driver_config

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
STOP_WITHIN_S = 5.0
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

    def __init__(self, tmp_path, driver, *options):
        (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))
        (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
        self.out = tmp_path / "out"
        command = [sys.executable, "-m", "loadgen", "run", "-d", str(tmp_path / "driver.yaml")]
        command += [str(tmp_path / "workload.yaml"), "-o", str(self.out), "--json-lines"]
        command += ["--stats-interval", "1s", "--processes", "1", *options]
        self.started = time.monotonic()
        self.child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
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
        pytest.fail(f"no {phase} phase within {timeout_s} s: {self.records}")

    def stop(self, signum):
        """Send ``signum``; return the seconds until the process exited."""
        sent = time.monotonic()
        self.child.send_signal(signum)
        self.child.wait(60)
        return time.monotonic() - sent

    def finish(self, timeout_s):
        self.child.wait(timeout_s)
        return time.monotonic() - self.started

    def result(self):
        [path] = self.out.glob("*.json")
        return json.loads(path.read_text())


@pytest.fixture
def stalled_kafka():
    """tansu behind a proxy: yields (proxy, driver file contents); stopped after the test."""
    port = free_port()
    proxy = TcpProxy(port)
    try:
        broker = start_tansu(port=port, advertised_port=proxy.port)
    except MissingExtra as missing:
        proxy.close()
        unavailable(str(missing))
    except LoadgenError as error:
        proxy.close()
        unavailable(f"tansu did not start: {error}")
    config = tansu_driver_config(proxy.address)
    config["consumerConfig"] += SESSION_OUTLASTING_AN_OUTAGE
    yield proxy, {"name": "Kafka", "driver": "kafka", **config}
    proxy.close()
    broker.stop()


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
    ],
    ids=["kafka", "pulsar", "rabbitmq"],
)
def test_an_unreachable_broker_exits_3_quickly_naming_the_address(tmp_path, driver):
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    filled = json.loads(json.dumps(driver).replace("{address}", address))
    run = Run(tmp_path, {"name": "unreachable", **filled}, "--duration", "5s")
    elapsed = run.finish(60)
    assert run.child.returncode == 3, "".join(run.stderr)
    assert elapsed < 15
    message = "".join(run.stderr)
    assert address in message and "Traceback" not in message
    assert not run.out.exists() or not list(run.out.glob("*.json"))


def test_a_stall_that_ends_is_one_outage_and_loses_nothing(tmp_path, stalled_kafka):
    proxy, driver = stalled_kafka
    run = Run(tmp_path, driver, "--duration", "12s")
    run.wait_for("measure", intervals=4)
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


def test_a_stall_that_never_ends_still_ends_the_run_with_a_bounded_wait(tmp_path, stalled_kafka):
    proxy, driver = stalled_kafka
    run = Run(tmp_path, driver, "--duration", "6s")
    run.wait_for("measure", intervals=3)
    proxy.freeze()
    frozen_at = time.monotonic()
    run.finish(120)
    waited = time.monotonic() - frozen_at
    # the rest of the measurement (≤ 5 s), the drain (10 s), and teardown, which does not wait
    # out the admin timeout (30 s) of a broker that stopped answering; 5 s to write and exit
    assert waited < 5 + 10 + SILENT_BROKER_TEARDOWN_S + 5, waited
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


MEMORY_PHASES = [("warmup", 1), ("measure", 2)]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.parametrize("phase,intervals", MEMORY_PHASES, ids=[p for p, _ in MEMORY_PHASES])
def test_a_signal_in_warmup_or_measure_stops_within_5_s_keeping_the_result(
    tmp_path, signum, phase, intervals
):
    driver = yaml.safe_load(MEMORY.read_text())
    run = Run(tmp_path, driver, "--duration", "60s", "--warmup", "3s")
    run.wait_for(phase, intervals)
    assert run.stop(signum) < STOP_WITHIN_S
    assert run.child.returncode == 130, "".join(run.stderr)
    result = run.result()
    assert result["incomplete"] is True and result["stopReason"] == "interrupted"
    assert result["totalMessagesSent"] > 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_while_connecting_to_a_stalled_broker_stops_within_5_s(
    tmp_path, stalled_kafka, signum
):
    proxy, driver = stalled_kafka
    proxy.freeze()  # connections open, nothing answers: the run hangs in setup
    run = Run(tmp_path, driver, "--duration", "10s")
    run.wait_for("setup")
    time.sleep(1)
    assert run.stop(signum) < STOP_WITHIN_S
    assert run.child.returncode == 130, "".join(run.stderr)
    result = run.result()  # nothing was measured, and the result says so
    assert result["incomplete"] is True and result["stopReason"] == "interrupted"
    assert result["totalMessagesSent"] == 0


@pytest.mark.parametrize("phase", ["drain", "teardown"])
def test_a_signal_while_draining_or_tearing_down_a_stalled_broker_stops_within_5_s(
    tmp_path, stalled_kafka, phase
):
    proxy, driver = stalled_kafka
    run = Run(tmp_path, driver, "--duration", "4s")
    run.wait_for("measure", intervals=2)
    proxy.freeze()  # the drain then waits for confirms, teardown for the broker
    run.wait_for(phase, timeout_s=40)
    time.sleep(1)
    assert run.stop(signal.SIGINT) < STOP_WITHIN_S
    result = run.result()  # the measurement was over: its result is kept
    assert result["totalMessagesSent"] > 0
    assert run.child.returncode in (0, 130), "".join(run.stderr)
