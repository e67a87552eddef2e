"""State handling of `loadgen brokers` without starting a broker."""

import dataclasses
import importlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loadgen.base.errors import ConfigError, LocalBrokerSetupError
from loadgen.driver_api.local.certs import openssl_installed
from loadgen.driver_api.local.process import LocalBroker, process_alive
from loadgen.local_brokers import catalogue as local
from loadgen.local_brokers import launcher
from loadgen.pytest_plugin.require import unavailable


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(tmp_path))
    return tmp_path


def test_stale_state_file_of_a_dead_process_is_removed(state_dir):
    stale = state_dir / "kafka.json"
    stale.write_text(
        json.dumps(
            {"kind": "kafka", "address": "127.0.0.1:1", "pid": 2**22 + 12345, "log_path": "x"}
        )
    )
    assert local.status("kafka") is None
    assert not stale.exists()
    assert local.down("kafka") == []


def test_unknown_broker_kind_lists_the_supported_ones():
    with pytest.raises(ConfigError) as caught:
        local.status("kafak")
    assert caught.value.allowed == [
        "kafka",
        "nats",
        "pravega",
        "pulsar",
        "rabbitmq",
        "rabbitmq-streams",
        "redis",
        "spark",
    ]


def test_kafka_local_yaml_carries_the_same_tansu_settings_as_the_embedded_broker():
    from pathlib import Path

    from loadgen.driver_api.driver_file import load_driver_spec
    from loadgen_drivers.kafka.local.tansu import TANSU_CLIENT_SETTINGS

    path = Path(__file__).resolve().parents[2] / "configs" / "drivers" / "kafka-local.yaml"
    config = load_driver_spec(path).config
    for section, text in TANSU_CLIENT_SETTINGS.items():
        assert config[section].split() == text.split(), section


def test_rabbitmq_local_yaml_points_where_brokers_up_starts_the_node():
    from pathlib import Path

    from loadgen.driver_api.driver_file import load_driver_spec
    from loadgen_drivers.rabbitmq.local.server import LOCAL_DRIVER_SETTINGS

    path = Path(__file__).resolve().parents[2] / "configs" / "drivers" / "rabbitmq-local.yaml"
    config = load_driver_spec(path).config
    assert config["amqpUris"] == [
        f"amqp://guest:guest@127.0.0.1:{launcher.starters()['rabbitmq'].port}/%2F"
    ]
    for field, value in LOCAL_DRIVER_SETTINGS.items():
        assert config[field] == value


def test_secure_is_refused_for_a_kind_without_a_secured_endpoint():
    with pytest.raises(ConfigError) as caught:
        local.up("rabbitmq", secure=True)
    assert "--secure" in str(caught.value)
    assert {"kafka", "pulsar", "nats", "redis"} <= set(caught.value.allowed)


def test_a_secured_broker_keeps_its_own_state_beside_the_plain_one(state_dir):
    stale = {"kind": "kafka", "address": "127.0.0.1:1", "pid": 2**22 + 12345, "log_path": "x"}
    (state_dir / "kafka-secure.json").write_text(json.dumps(stale | {"driver_file": "d.yaml"}))
    assert local.status("kafka") is None  # the plain one's state is another file
    assert (state_dir / "kafka-secure.json").exists()
    assert local.status("kafka", secure=True) is None  # dead: removed
    assert not (state_dir / "kafka-secure.json").exists()


SECRET_CONFIG = {"commonConfig": 'sasl.jaas.config=x password="hunter2";'}


def secured_broker(state_dir: Path) -> LocalBroker:
    """A running secured broker (this test's own process) with a password in its config."""
    return LocalBroker(
        "kafka",
        "127.0.0.1:1",
        os.getpid(),
        "x.log",
        driver_config=SECRET_CONFIG,
        driver_file=str(state_dir / "kafka-secure" / "d.yaml"),
    )


def test_a_brokers_printed_form_hides_its_driver_config():
    assert "hunter2" not in repr(secured_broker(Path("state")))


def test_brokers_up_secure_writes_state_only_its_owner_reads_and_without_the_password(
    state_dir, monkeypatch
):
    monkeypatch.setattr(local, "start_with", lambda *_, **__: secured_broker(state_dir))
    broker, started = local.up("kafka", secure=True)
    assert started
    state = state_dir / "kafka-secure.json"
    assert "hunter2" not in state.read_text()
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert local.status("kafka", secure=True) == dataclasses.replace(broker, driver_config={})
    assert local.up("kafka", secure=True) == (local.status("kafka", secure=True), False)
    elsewhere = r"kafka --secure already runs at 127\.0\.0\.1:1\b"
    with pytest.raises(LocalBrokerSetupError, match=elsewhere):
        local.up("kafka", 19093, secure=True)  # a port other than the running one's


def test_nodes_are_refused_without_upstream():
    with pytest.raises(ConfigError, match="--nodes"):
        local.up("kafka", nodes=3)


def test_down_stops_every_variant_of_a_kind_and_flags_narrow_it(state_dir, monkeypatch):
    stopped = []
    monkeypatch.setattr(LocalBroker, "stop", lambda broker, *_: stopped.append(broker.address))
    for name, port in (("kafka", 1), ("kafka-secure", 2), ("kafka-upstream", 3)):
        alive = LocalBroker("kafka", f"127.0.0.1:{port}", os.getpid(), "x.log")
        (state_dir / f"{name}.json").write_text(json.dumps(dataclasses.asdict(alive)))
    assert [variant.name for variant, _ in local.running("kafka")] == [
        "kafka", "kafka-secure", "kafka-upstream",
    ]  # fmt: skip
    assert [variant.name for variant in local.down("kafka", upstream=True)] == ["kafka-upstream"]
    assert [variant.name for variant in local.down("kafka")] == ["kafka", "kafka-secure"]
    assert stopped == ["127.0.0.1:3", "127.0.0.1:1", "127.0.0.1:2"]
    assert local.running() == []


def test_a_state_file_an_older_loadgen_left_readable_with_the_password_is_rewritten(state_dir):
    state = state_dir / "kafka-secure.json"
    state.write_text(json.dumps(dataclasses.asdict(secured_broker(state_dir))))
    state.chmod(0o644)
    assert local.status("kafka", secure=True) is not None
    assert "hunter2" not in state.read_text()
    assert stat.S_IMODE(state.stat().st_mode) == 0o600


BACKEND_STARTER = {"kafka": "start_tansu", "pulsar": "start_pulsar_lite"}


@pytest.mark.parametrize("kind", sorted(BACKEND_STARTER))
def test_a_secured_start_that_fails_after_its_backend_started_stops_it_and_removes_its_folder(
    kind, monkeypatch
):
    if not openssl_installed():
        unavailable("the openssl command is not installed")
    module = importlib.import_module(f"loadgen_drivers.{kind}.local.secure")
    started: dict[str, Any] = {}

    def backend(**options: Any) -> LocalBroker:
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        started.update(process=process, folder=options.get("log_dir") or options["data_dir"])
        return LocalBroker(kind, "127.0.0.1:1", process.pid, "backend.log")

    def failing_front(*_: Any, **__: Any) -> None:
        raise OSError("the front cannot start")

    monkeypatch.setattr(module, BACKEND_STARTER[kind], backend)
    monkeypatch.setattr(module, "start_front", failing_front)
    monkeypatch.setattr(module, "pulsar_lite_binary", lambda: None, raising=False)
    with pytest.raises(OSError, match="the front cannot start"):
        getattr(module, f"start_secure_{kind}")()
    try:
        assert started["process"].poll() is not None
        assert not started["folder"].exists()  # with the secret written into it
    finally:
        started["process"].kill()
        started["process"].wait()


def test_an_exited_process_not_yet_collected_by_its_parent_counts_as_gone():
    """`brokers down` stops processes that `brokers up` started and left to init, which may
    collect them seconds later: until then they are zombies, and `down` must not wait for it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    deadline = time.monotonic() + 10
    while stat.read_text().rpartition(")")[2].split()[0] != "Z":  # exited, not yet waited for
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert not process_alive(child.pid)
    finally:
        child.wait()
