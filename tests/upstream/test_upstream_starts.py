"""The ways `loadgen brokers up KIND --upstream` refuses to start, alike for every upstream
server: a `*_HOME` that is no distribution, no Java, a port in use. Each is exit 2 in one line
before anything starts (the failures that need the server itself are in each kind's module)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from tests.upstream.test_kafka_upstream_cli import env, loadgen

pytestmark = pytest.mark.upstream
__all__ = ["env"]  # the fixture, used by name
HOMES = {
    "kafka": ("KAFKA_HOME", "libs", "kafka-clients-4.4.0.jar", "Apache Kafka"),
    "pulsar": ("PULSAR_HOME", "lib", "org.apache.pulsar-pulsar-client-4.2.4.jar", "Apache Pulsar"),
    "pravega": ("PRAVEGA_HOME", "lib", "pravega-client-0.13.0.jar", "Pravega"),
}
"""Each kind's variable, its distribution's jar folder, a jar that is not the server's, and
the server's name."""


@pytest.mark.parametrize("kind", sorted(HOMES))
def test_a_home_that_is_no_distribution_is_exit_2_in_one_line(kind, tmp_path, env):
    variable, folder, other_jar, server = HOMES[kind]
    (tmp_path / folder).mkdir()
    (tmp_path / folder / other_jar).touch()
    up = loadgen("brokers", "up", kind, "--upstream", env={**env, variable: str(tmp_path)})
    assert up.returncode == 2
    [line] = up.stderr.strip().splitlines()
    assert f"{variable}={tmp_path} is not an unpacked {server}" in line


@pytest.mark.parametrize("kind", sorted(HOMES))
def test_no_java_is_exit_2_naming_java_home(kind, tmp_path, env):
    up = loadgen("brokers", "up", kind, "--upstream", env={**env, "JAVA_HOME": str(tmp_path)})
    assert up.returncode == 2
    assert "install Java 17 or later, or set JAVA_HOME" in up.stderr


@pytest.mark.parametrize("kind", sorted(HOMES))
def test_a_port_in_use_is_exit_2_before_anything_starts(kind, env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        up = loadgen("brokers", "up", kind, "--upstream", "--port", port, env=env)
    assert up.returncode == 2
    assert f"port 127.0.0.1:{port} is already in use" in up.stderr
    assert not any(Path(env["LOADGEN_STATE_DIR"]).glob("*.json"))


def test_nodes_for_a_server_that_starts_one_is_exit_2_naming_the_kinds_that_cluster(env):
    """Was a TypeError traceback: the standalone starters take no ``nodes``."""
    up = loadgen("brokers", "up", "pulsar", "--upstream", "--nodes", 3, env=env)
    assert up.returncode == 2
    assert up.stderr.strip() == (
        "error: --nodes: pulsar --upstream starts one node (got 3; allowed: KIND kafka (clusters))"
    )
