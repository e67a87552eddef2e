"""Apache Kafka itself as a local broker, as a user meets it: `loadgen brokers up kafka
--upstream` (one node, three nodes, secured), a run with the driver file it prints, `status`,
`down`, and every way a start can fail (one line, exit 2 or 3, nothing left running).

Needs Java 17 and Kafka's jars (Maven Central once, then the cache; or $KAFKA_HOME): the
`upstream` step of .ci/run.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loadgen.driver_api.local.process import free_port, process_alive
from loadgen_drivers.kafka.local import upstream

pytestmark = pytest.mark.upstream

WORKLOAD = dict(
    name="upstream", topics=1, partitionsPerTopic=6, messageSize=512, producersPerTopic=1,
    producerRate=2000, subscriptionsPerTopic=1, consumerPerSubscription=2, testDurationMinutes=1,
)  # fmt: skip


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "LOADGEN_STATE_DIR": str(tmp_path / "state")}


def loadgen(*args, env=None, timeout=180):
    """``loadgen ARGS`` as a user types it (``env``: the whole environment; None: this one)."""
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


def printed_driver_file(up: subprocess.CompletedProcess) -> Path:
    [path] = re.findall(r"^driver file: (.+)$", up.stdout, re.MULTILINE)
    return Path(path)


def pids_of(state_dir: Path) -> list[int]:
    pids = []
    for state in state_dir.glob("*.json"):
        broker = json.loads(state.read_text())
        pids += [broker["pid"], *broker["node_pids"], *broker["helper_pids"]]
    return pids


def run_exact(
    driver_file: Path, workload_file: Path, out: Path, env, *, warmup="3s", duration="10s",
    interval="2s",
) -> dict:  # fmt: skip
    """A `loadgen run` as a user types it; its result, checked exact with its rate held."""
    done = loadgen(
        "run", "-d", driver_file, workload_file, "--warmup", warmup, "--duration", duration,
        "--stats-interval", interval, "-o", out, "--no-report", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = out.glob("*.json")
    result = json.loads(path.read_text())
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    assert "rate: held" in done.stdout + done.stderr
    return result


def workload_file(tmp_path: Path) -> Path:
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(WORKLOAD))
    return path


@pytest.mark.parametrize("nodes", [1, 3])
def test_up_then_a_run_with_the_printed_file_counts_exactly_then_down_leaves_nothing(
    nodes, tmp_path, env
):
    port = free_port()
    up = loadgen("brokers", "up", "kafka", "--upstream", "--nodes", nodes, "--port", port, env=env)
    state = Path(env["LOADGEN_STATE_DIR"])
    pids: list[int] = []
    try:
        assert up.returncode == 0, up.stderr
        assert f"kafka --upstream up at 127.0.0.1:{port} (Apache Kafka 4.4.0" in up.stdout
        driver = yaml.safe_load(printed_driver_file(up).read_text())
        assert driver["replicationFactor"] == nodes
        assert ("min.insync.replicas=2" in driver.get("topicConfig", "")) == (nodes == 3)
        assert len(driver["commonConfig"].split("bootstrap.servers=")[1].split()[0].split(",")) == (
            nodes
        )
        status = loadgen("brokers", "status", env=env)
        assert status.returncode == 0
        assert f"kafka --upstream running at 127.0.0.1:{port}" in status.stdout
        run_exact(printed_driver_file(up), workload_file(tmp_path), tmp_path / "out", env)
        pids = pids_of(state)
        assert len(pids) == nodes
    finally:
        down = loadgen("brokers", "down", "kafka", env=env)
    assert down.returncode == 0 and "kafka --upstream stopped" in down.stdout
    assert not any(process_alive(pid) for pid in pids)
    assert loadgen("brokers", "status", env=env).returncode == 1


def test_secured_upstream_logs_in_with_scram_and_refuses_a_wrong_password_in_seconds(tmp_path, env):
    up = loadgen("brokers", "up", "kafka", "--upstream", "--secure", "--port", free_port(), env=env)
    state = Path(env["LOADGEN_STATE_DIR"])
    try:
        assert up.returncode == 0, up.stderr
        driver_file = printed_driver_file(up)
        text = driver_file.read_text()
        [password] = re.findall(r'password="([^"]+)"', text)
        assert "security.protocol=SASL_SSL" in text and "sasl.mechanism=SCRAM-SHA-512" in text
        run_exact(driver_file, workload_file(tmp_path), tmp_path / "out", env)
        readable = [
            path for path in state.rglob("*")
            if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077
            and password in path.read_text(errors="replace")
        ]  # fmt: skip
        assert readable == []
        wrong = tmp_path / "wrong.yaml"
        wrong.write_text(text.replace(password, "not-the-password"))
        started = time.monotonic()
        refused = loadgen("run", "-d", wrong, tmp_path / "workload.yaml", "--duration", "5s",
                          "-o", tmp_path / "refused", "--no-report", env=env)  # fmt: skip
        assert refused.returncode == 4, refused.stderr[-2000:]
        assert time.monotonic() - started < 15
        assert "refused the login of user 'loadgen'" in refused.stderr
        assert password not in refused.stderr + refused.stdout
    finally:
        loadgen("brokers", "down", env=env)
    assert loadgen("brokers", "status", env=env).returncode == 1


def test_a_distribution_whose_server_cannot_run_is_exit_3_naming_the_node_and_its_log(
    tmp_path, env
):
    """A KAFKA_HOME with a core jar that holds no Kafka: formatting node 1's storage fails."""
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka_2.13-4.4.0.jar").write_bytes(b"not a jar")
    up = loadgen("brokers", "up", "kafka", "--upstream", env={**env, "KAFKA_HOME": str(tmp_path)})
    assert up.returncode == 3, up.stderr
    [line] = up.stderr.strip().splitlines()
    assert "formatting node 1's storage failed" in line and "format.log" in line
    assert not any(Path(env["LOADGEN_STATE_DIR"]).glob("*.json"))


def test_a_cluster_id_that_starts_with_a_dash_formats(monkeypatch):
    """One cluster id in 32 starts with "-", which StorageTool read as an option (seen in CI)."""
    real = upstream.secrets.token_bytes
    monkeypatch.setattr(upstream.secrets, "token_bytes", lambda n: b"\xf8" + real(n - 1))
    broker = upstream.start_upstream_kafka()
    try:
        assert broker.server.startswith("Apache Kafka")
    finally:
        broker.stop()
