"""Apache Pulsar itself as a local broker, as a user meets it: `loadgen brokers up pulsar
--upstream`, then OMB's own `pulsar.yaml` pointed at the printed URLs (ensemble 3/3/2 on the
standalone's three bookies), exact with an Exclusive and a Failover subscription; secured with
Pulsar's own TLS and token authentication, a wrong token refused in seconds and never shown;
`status`, `down`, and the failed starts.

Needs Java 17 and Pulsar's jars (Maven Central once, then the cache; or $PULSAR_HOME): the
`upstream` step of .ci/run.
"""

from __future__ import annotations

import re
import stat
import time
from pathlib import Path

import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import (
    env,
    loadgen,
    pids_of,
    printed_driver_file,
    run_exact,
)

from loadgen.driver_api.local.process import free_port, process_alive
from loadgen_drivers.pulsar.local.jwt_hs256 import make_token, new_secret

pytestmark = [pytest.mark.upstream, pytest.mark.usefixtures("pulsar_can_start")]
OMB_PULSAR = Path(__file__).parents[2] / "configs" / "drivers" / "pulsar.yaml"
__all__ = ["env"]  # the fixture, used by name


def workload(tmp_path: Path, consumers: int) -> Path:
    path = tmp_path / f"workload-{consumers}.yaml"
    path.write_text(yaml.safe_dump(dict(
        name=f"upstream-pulsar-{consumers}", topics=1, partitionsPerTopic=4, messageSize=512,
        producersPerTopic=1, producerRate=5000, subscriptionsPerTopic=1,
        consumerPerSubscription=consumers, testDurationMinutes=1,
    )))  # fmt: skip
    return path


def omb_file_at(up_stdout: str, subscription: str, tmp_path: Path) -> Path:
    """OMB's pulsar.yaml with the printed service and admin URLs, as a user edits it."""
    [service] = re.findall(r"^service URL: (\S+)$", up_stdout, re.MULTILINE)
    [admin] = re.findall(r"^admin URL: (\S+)$", up_stdout, re.MULTILINE)
    document = yaml.safe_load(OMB_PULSAR.read_text())
    document["client"].update(serviceUrl=service, httpUrl=admin)
    document["consumer"]["subscriptionType"] = subscription
    path = tmp_path / f"pulsar-{subscription}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def run_20s_exact(driver_file: Path, workload_file: Path, out: Path, env) -> dict:
    result = run_exact(driver_file, workload_file, out, env, duration="20s")
    assert result["totalMessagesSent"] > 90_000
    return result


def test_omb_pulsar_yaml_at_the_printed_urls_is_exact_on_exclusive_and_failover(tmp_path, env):
    port = free_port()
    up = loadgen("brokers", "up", "pulsar", "--upstream", "--port", port, env=env)
    pids: list[int] = []
    try:
        assert up.returncode == 0, up.stderr
        assert f"pulsar --upstream up at 127.0.0.1:{port} (Apache Pulsar 4.2.4" in up.stdout
        assert f"service URL: pulsar://127.0.0.1:{port}" in up.stdout
        printed = yaml.safe_load(printed_driver_file(up).read_text())
        assert printed["client"]["serviceUrl"] == f"pulsar://127.0.0.1:{port}"
        for subscription, consumers in (("Exclusive", 1), ("Failover", 2)):
            driver_file = omb_file_at(up.stdout, subscription, tmp_path)
            run_20s_exact(driver_file, workload(tmp_path, consumers), tmp_path / subscription, env)
        status = loadgen("brokers", "status", env=env)
        assert f"pulsar --upstream running at 127.0.0.1:{port}" in status.stdout
        pids = pids_of(Path(env["LOADGEN_STATE_DIR"]))
        assert len(pids) == 1
    finally:
        down = loadgen("brokers", "down", "pulsar", env=env)
    assert down.returncode == 0 and "pulsar --upstream stopped" in down.stdout
    assert not any(process_alive(pid) for pid in pids)
    assert loadgen("brokers", "status", env=env).returncode == 1


def test_secured_upstream_logs_in_with_a_token_and_refuses_a_wrong_one_in_seconds(tmp_path, env):
    up = loadgen("brokers", "up", "pulsar", "--upstream", "--secure", "--port", free_port(),
                 env=env)  # fmt: skip
    state = Path(env["LOADGEN_STATE_DIR"])
    try:
        assert up.returncode == 0, up.stderr
        assert "service URL: pulsar+ssl://" in up.stdout and "admin URL: https://" in up.stdout
        driver_file = printed_driver_file(up)
        text = driver_file.read_text()
        [token] = re.findall(r"token:([\w.-]+)", text)
        assert token not in up.stdout + up.stderr
        run_20s_exact(driver_file, workload(tmp_path, 2), tmp_path / "secured", env)
        readable = [
            path for path in state.rglob("*")
            if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077
            and token in path.read_text(errors="replace")
        ]  # fmt: skip
        assert readable == []
        wrong_token = make_token("loadgen", new_secret())  # signed with another key
        wrong = tmp_path / "wrong.yaml"
        wrong.write_text(text.replace(token, wrong_token))
        started = time.monotonic()
        refused = loadgen("run", "-d", wrong, workload(tmp_path, 1), "--duration", "5s",
                          "-o", tmp_path / "refused", "--no-report", env=env)  # fmt: skip
        assert refused.returncode == 4, refused.stderr[-2000:]
        assert time.monotonic() - started < 15
        shown = refused.stderr + refused.stdout
        assert token not in shown and wrong_token not in shown
    finally:
        loadgen("brokers", "down", env=env)
    assert loadgen("brokers", "status", env=env).returncode == 1


def test_a_distribution_whose_server_cannot_run_is_exit_3_naming_its_log(tmp_path, env):
    """A PULSAR_HOME whose broker jar holds no Pulsar: the JVM exits at once."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "org.apache.pulsar-pulsar-broker-4.2.4.jar").write_bytes(b"not a jar")
    up = loadgen("brokers", "up", "pulsar", "--upstream", "--port", free_port(),
                 env={**env, "PULSAR_HOME": str(tmp_path)})  # fmt: skip
    assert up.returncode == 3, up.stderr
    [line] = up.stderr.strip().splitlines()
    assert "Apache Pulsar exited at start" in line and "server.log" in line
    assert not any(Path(env["LOADGEN_STATE_DIR"]).glob("*.json"))
