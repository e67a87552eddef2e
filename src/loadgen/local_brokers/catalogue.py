"""``loadgen brokers up|down|status``: local brokers that outlive the command that started them.

State lives in ``$LOADGEN_STATE_DIR`` (default ``~/.cache/loadgen/brokers``), one JSON file per
broker kind with its pid, address and log; a file whose process is gone is stale and removed.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from loadgen.base.errors import ConfigError
from loadgen.local_brokers.kafka_secure import start_secure_kafka
from loadgen.local_brokers.launch import LocalBroker, process_alive
from loadgen.local_brokers.pravega.launch import start_local_pravega
from loadgen.local_brokers.pulsar import start_pulsar_lite
from loadgen.local_brokers.pulsar_secure import start_secure_pulsar
from loadgen.local_brokers.rabbitmq import start_rabbitmq
from loadgen.local_brokers.spark import start_spark_cluster
from loadgen.local_brokers.tansu import start_tansu

DEFAULT_PORTS = {
    "kafka": 19092,
    "rabbitmq": 5672,
    "pulsar": 16650,
    "pravega": 9090,
    "spark": 7077,
}
STARTERS = {
    "kafka": start_tansu,
    "rabbitmq": start_rabbitmq,
    "pulsar": start_pulsar_lite,
    "pravega": start_local_pravega,
    "spark": start_spark_cluster,  # not a broker: a standalone master + worker for the pipeline
}
SECURE_PORTS = {"kafka": 19093, "pulsar": 16651}
SECURE_STARTERS = {"kafka": start_secure_kafka, "pulsar": start_secure_pulsar}
"""``--secure``: TLS and a login checked in front of the same local broker, with a driver file
that logs in (RabbitMQ's own TLS listener is configured on the node itself)."""


def state_dir() -> Path:
    configured = os.environ.get("LOADGEN_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "loadgen" / "brokers"


def _check_kind(kind: str, secure: bool) -> None:
    if kind not in DEFAULT_PORTS:
        raise ConfigError(
            "no local broker of this kind", path="KIND", value=kind, allowed=sorted(DEFAULT_PORTS)
        )
    if secure and kind not in SECURE_STARTERS:
        raise ConfigError(
            "no secured local broker of this kind",
            path="--secure",
            value=kind,
            allowed=sorted(SECURE_STARTERS),
        )


def _name(kind: str, secure: bool) -> str:
    """The broker's state file and data folder name: a secured one runs beside a plain one."""
    return f"{kind}-secure" if secure else kind


def status(kind: str, *, secure: bool = False) -> LocalBroker | None:
    _check_kind(kind, secure)
    path = state_dir() / f"{_name(kind, secure)}.json"
    if not path.exists():
        return None
    broker = LocalBroker(**json.loads(path.read_text()))
    if process_alive(broker.pid):
        return broker
    path.unlink(missing_ok=True)
    return None


def up(kind: str, port: int | None = None, *, secure: bool = False) -> LocalBroker:
    running = status(kind, secure=secure)
    if running is not None:
        return running
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    name = _name(kind, secure)
    starter, ports = (SECURE_STARTERS, SECURE_PORTS) if secure else (STARTERS, DEFAULT_PORTS)
    broker = starter[kind](port or ports[kind], folder / name, detach=True)
    (folder / f"{name}.json").write_text(json.dumps(asdict(broker)))
    return broker


def down(kind: str, *, secure: bool = False) -> bool:
    broker = status(kind, secure=secure)
    if broker is None:
        return False
    broker.stop()
    (state_dir() / f"{_name(kind, secure)}.json").unlink(missing_ok=True)
    return True
