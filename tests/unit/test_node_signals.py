"""The nodes of a local broker for a run's faults, without a broker: the catalogue's state while
a node is down, which broker a driver config names, and signals to a node's whole process group
(stand-in processes, each in a session of its own as a detached broker is)."""

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadgen.base.errors import LocalBrokerError
from loadgen.driver_api.local.process import LocalBroker, free_port, process_alive
from loadgen.local_brokers import catalogue
from loadgen.local_brokers import nodes as nodes_module
from loadgen.local_brokers.launcher import Variant
from loadgen.local_brokers.nodes import LocalNodes, nodes_for

GONE_PID = 2**22 + 12345
UPSTREAM = Variant("kafka", upstream=True)


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(tmp_path))
    return tmp_path


def write_state(state_dir: Path, name: str, broker: LocalBroker) -> Path:
    path = state_dir / f"{name}.json"
    path.write_text(json.dumps(dataclasses.asdict(broker)))
    return path


def cluster(pid: int, node_pids: list[int], ports=(29092, 29093, 29094)) -> LocalBroker:
    addresses = [f"127.0.0.1:{port}" for port in ports]
    return LocalBroker(
        "kafka", addresses[0], pid, "x.log", node_pids=node_pids, node_addresses=addresses
    )


@pytest.fixture
def wrapped():
    """A stand-in broker: a wrapper process leading its own session, its server a child in the
    same process group (as RabbitMQ's script and Erlang VM are); yields (wrapper, server pid)."""
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    wrapper = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    server = int(wrapper.stdout.readline())
    yield wrapper, server
    for pid in (wrapper.pid, server):
        if process_alive(pid):
            os.kill(pid, 9)
    wrapper.wait()


def state_letter(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_a_cluster_whose_first_node_is_down_is_still_running(state_dir):
    path = write_state(state_dir, "kafka-upstream", cluster(GONE_PID, [os.getpid(), GONE_PID + 1]))
    assert catalogue.status("kafka", upstream=True) is not None
    assert path.exists()
    assert [variant for variant, _ in catalogue.running("kafka")] == [UPSTREAM]


def test_a_cluster_none_of_whose_nodes_runs_is_stale_and_removed(state_dir):
    path = write_state(state_dir, "kafka-upstream", cluster(GONE_PID, [GONE_PID + 1]))
    assert catalogue.status("kafka", upstream=True) is None
    assert not path.exists()


def test_replace_pid_writes_a_restarted_nodes_pid_where_its_old_one_was(state_dir):
    write_state(state_dir, "kafka-upstream", cluster(os.getpid(), [11, 12]))
    assert catalogue.replace_pid(UPSTREAM, 12, 22)
    assert catalogue.replace_pid(UPSTREAM, os.getpid(), 21) is True
    state = json.loads((state_dir / "kafka-upstream.json").read_text())
    assert (state["pid"], state["node_pids"]) == (21, [11, 22])
    assert not catalogue.replace_pid(UPSTREAM, 99, 100)
    assert not catalogue.replace_pid(Variant("kafka"), 11, 100)  # no state file


def test_down_signals_only_the_nodes_that_run(state_dir, monkeypatch):
    stopped = []
    monkeypatch.setattr(
        LocalBroker, "stop", lambda broker, *_: stopped.append([broker.pid, *broker.node_pids])
    )
    write_state(state_dir, "kafka-upstream", cluster(GONE_PID, [os.getpid(), GONE_PID + 1]))
    assert catalogue.down("kafka") == [UPSTREAM]
    assert stopped == [[os.getpid()]]
    assert not (state_dir / "kafka-upstream.json").exists()


def test_nodes_for_finds_the_running_broker_a_config_names_by_any_node(state_dir):
    write_state(state_dir, "kafka-upstream", cluster(os.getpid(), [os.getpid(), os.getpid()]))
    config = {"commonConfig": "bootstrap.servers=127.0.0.1:29094"}
    nodes = nodes_for(str(config))
    assert nodes is not None and nodes.variant == UPSTREAM and nodes.count() == 3
    assert nodes.index_of("127.0.0.1:29093") == 2
    assert nodes.index_of("localhost:29094") == 3
    assert nodes.index_of("127.0.0.1:9092") is None
    assert nodes.address_of(1) == "127.0.0.1:29092"
    assert nodes_for("bootstrap.servers=127.0.0.1:2909") is None  # a prefix of a port
    assert nodes_for("bootstrap.servers=127.0.0.1:290921") is None
    assert nodes_for("bootstrap.servers=10.127.0.0.1:29092") is None
    with pytest.raises(LocalBrokerError, match="has 3 node"):
        nodes.address_of(4)


def test_pause_resume_and_kill_act_on_the_nodes_whole_process_group(wrapped):
    wrapper, server = wrapped
    nodes = LocalNodes(
        Variant("rabbitmq"), LocalBroker("rabbitmq", "127.0.0.1:5672", wrapper.pid, "x")
    )
    nodes.pause(1)
    assert state_letter(wrapper.pid) == "T" and state_letter(server) == "T"
    nodes.resume(1)
    assert state_letter(wrapper.pid) != "T" and state_letter(server) != "T"
    started = time.monotonic()
    nodes.kill(1)
    assert time.monotonic() - started < 2
    assert not process_alive(wrapper.pid) and not process_alive(server)
    nodes.kill(1)  # a node already gone: nothing to do
    with pytest.raises(LocalBrokerError, match=r"node 1 .* is not running"):
        nodes.pause(1)


def test_a_graceful_stop_kills_what_the_node_left_running_after_its_wait(wrapped, monkeypatch):
    monkeypatch.setattr(nodes_module, "STOP_TIMEOUT_S", 0.5)
    wrapper, server = wrapped
    nodes = LocalNodes(
        Variant("rabbitmq"), LocalBroker("rabbitmq", "127.0.0.1:5672", wrapper.pid, "x")
    )
    nodes.stop(1)  # SIGTERM to the wrapper; its child, left behind, is killed with the group
    assert not process_alive(wrapper.pid) and not process_alive(server)


def test_a_node_that_runs_is_not_started_a_second_time(wrapped):
    wrapper, _ = wrapped
    nodes = LocalNodes(Variant("kafka"), LocalBroker("kafka", "127.0.0.1:19092", wrapper.pid, "x"))
    with pytest.raises(LocalBrokerError, match=f"still runs \\(pid {wrapper.pid}\\)"):
        nodes.start(1)


def test_a_secured_stand_in_refuses_to_start_again_saying_why():
    secured = LocalBroker("kafka", f"127.0.0.1:{free_port()}", GONE_PID, "x")
    nodes = LocalNodes(Variant("kafka", secure=True), secured)
    with pytest.raises(LocalBrokerError, match="kafka --secure makes a new password"):
        nodes.start(1)
