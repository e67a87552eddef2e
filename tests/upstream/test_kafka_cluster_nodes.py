"""The nodes of a three-node Apache Kafka cluster that ``loadgen brokers up`` started, as a run's
fault schedule uses them: a node killed and started again, one paused and resumed, node 1
stopped and started again; ``brokers status`` and ``brokers down`` follow every new pid, and
nothing is left running.

Needs Java 17 and Kafka's jars: the ``upstream`` step of .ci/run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadgen.driver_api.local.process import free_port, port_open, process_alive
from loadgen.local_brokers import catalogue
from loadgen.local_brokers.launcher import Variant
from loadgen.local_brokers.nodes import LocalNodes, nodes_for

pytestmark = pytest.mark.upstream

UPSTREAM = Variant("kafka", upstream=True)
REJOIN_TIMEOUT_S = 60.0


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(folder))
    return folder


def state(state_dir: Path) -> dict:
    return json.loads((state_dir / f"{UPSTREAM.name}.json").read_text())


def process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def status_line(state_dir: Path) -> str:
    """``loadgen brokers status`` as a user runs it, in another process."""
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "brokers", "status", "kafka"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "LOADGEN_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def await_every_node_in_the_metadata(nodes: LocalNodes, config: dict) -> float:
    """Seconds until the metadata lists every node again (at most :data:`REJOIN_TIMEOUT_S`)."""
    from confluent_kafka.admin import AdminClient

    servers = config["commonConfig"].split("bootstrap.servers=")[1].split()[0]
    admin = AdminClient({"bootstrap.servers": servers})
    started = time.monotonic()
    while time.monotonic() - started < REJOIN_TIMEOUT_S:
        try:
            if len(admin.list_topics(timeout=2).brokers) == nodes.count():
                return time.monotonic() - started
        except Exception:  # a node not yet serving metadata: asked again until the deadline
            pass
        time.sleep(0.2)
    raise AssertionError(f"not every node in the metadata after {REJOIN_TIMEOUT_S:.0f} s")


def test_a_clusters_nodes_are_killed_paused_stopped_and_started_again_and_down_leaves_nothing(
    state_dir,
):
    broker, started = catalogue.up("kafka", free_port(), upstream=True, nodes=3)
    every_pid = {broker.pid, *broker.node_pids}
    try:
        assert started
        nodes = nodes_for(str(broker.driver_config))
        assert nodes is not None and nodes.variant == UPSTREAM and nodes.count() == 3
        assert [nodes.address_of(index) for index in (1, 2, 3)] == broker.node_addresses
        assert nodes.index_of(broker.node_addresses[1]) == 2

        old = nodes.pid_of(2)
        nodes.kill(2)
        assert not process_alive(old)
        [(variant, running)] = catalogue.running()
        assert variant == UPSTREAM and old in running.node_pids

        began = time.monotonic()
        new = nodes.start(2)
        restart_s = time.monotonic() - began
        every_pid.add(new)
        assert new != old and process_alive(new)
        assert port_open(int(nodes.address_of(2).rpartition(":")[2]))
        assert state(state_dir)["node_pids"] == [new, broker.node_pids[1]]
        assert f" {new} " in status_line(state_dir)
        rejoin_s = await_every_node_in_the_metadata(nodes, broker.driver_config)
        print(f"node 2 listened {restart_s:.1f} s after its start, rejoined {rejoin_s:.1f} s later")

        third = nodes.pid_of(3)
        nodes.pause(3)
        assert process_state(third) == "T"
        nodes.resume(3)
        assert process_state(third) != "T"

        first = nodes.pid_of(1)
        nodes.stop(1)
        assert not process_alive(first)
        assert catalogue.status("kafka", upstream=True) is not None  # node 1 down: state kept
        assert state(state_dir)["pid"] == first
        began = time.monotonic()
        again = nodes.start(1)
        print(f"node 1 listened {time.monotonic() - began:.1f} s after its start")
        every_pid.add(again)
        assert state(state_dir)["pid"] == again
        assert f"pids {again} " in status_line(state_dir)
        await_every_node_in_the_metadata(nodes, broker.driver_config)
    finally:
        assert catalogue.down("kafka") == [UPSTREAM]
    assert not any(process_alive(pid) for pid in every_pid)
    assert catalogue.running() == []
