"""The one node of each single-node local broker ``loadgen brokers up`` starts (tansu,
pulsar-lite, RabbitMQ), as a run's fault schedule uses it: killed and started again on its port
and folder, paused and resumed, stopped and started again; the catalogue's state follows the new
pid, and ``brokers down`` leaves nothing running."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from loadgen.base.errors import LoadgenError
from loadgen.driver_api.local.process import (
    free_port,
    port_open,
    process_alive,
    stop_processes,
)
from loadgen.local_brokers import catalogue
from loadgen.local_brokers.launcher import Variant
from loadgen.local_brokers.nodes import nodes_for
from loadgen.pytest_plugin.require import unavailable

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path, monkeypatch):
    folder = tmp_path / "state"
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(folder))
    return folder


def process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


@pytest.mark.parametrize("kind", ["kafka", "pulsar", "rabbitmq"])
def test_the_node_of_a_single_node_broker_is_killed_paused_stopped_and_started_again(
    kind, state_dir
):
    try:
        broker, _ = catalogue.up(kind, free_port())
    except (LoadgenError, ImportError) as missing:
        unavailable(f"no local {kind} here: {missing}")
    port = int(broker.address.rpartition(":")[2])
    pids = {broker.pid, *broker.helper_pids}
    try:
        nodes = nodes_for(str(broker.driver_config))
        assert nodes is not None and nodes.variant == Variant(kind) and nodes.count() == 1
        assert nodes.index_of(broker.address) == 1

        nodes.kill(1)
        assert not process_alive(broker.pid) and not port_open(port)
        assert all(map(process_alive, broker.helper_pids))  # RabbitMQ's epmd: not the node's
        began = time.monotonic()
        new = nodes.start(1)
        print(f"{kind}: killed node listened {time.monotonic() - began:.1f} s after its start")
        pids.add(new)
        assert new != broker.pid and port_open(port)
        assert catalogue.status(kind).pid == new

        nodes.pause(1)
        assert process_state(new) == "T"
        nodes.resume(1)
        assert process_state(new) != "T"

        nodes.stop(1)
        assert not process_alive(new)
        assert catalogue.running(kind) == []  # no process of it runs: stale, its state removed
        again = nodes.start(1)
        pids.add(again)
        state = json.loads((state_dir / f"{kind}.json").read_text())  # written anew
        assert state["pid"] == again and state["helper_pids"] == broker.helper_pids
    finally:
        catalogue.down(kind)
        stop_processes([pid for pid in pids if process_alive(pid)], 5)  # what a failure left
    assert not any(process_alive(pid) for pid in pids)
    assert catalogue.running() == []
