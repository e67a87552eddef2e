"""``loadgen brokers up|down|status``: local brokers that outlive the command that started them.

State lives in ``$LOADGEN_STATE_DIR`` (default ``~/.cache/loadgen/brokers``), one JSON file per
broker kind with its pid, address and log; a file whose process is gone is stale and removed.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from loadgen.errors import ConfigError
from loadgen.pipeline.cluster import start_spark_cluster
from loadgen.testing.process import LocalBroker, process_alive
from loadgen.testing.pulsar import start_pulsar_lite
from loadgen.testing.rabbitmq import start_rabbitmq
from loadgen.testing.tansu import start_tansu

DEFAULT_PORTS = {"kafka": 19092, "rabbitmq": 5672, "pulsar": 16650, "spark": 7077}
STARTERS = {
    "kafka": start_tansu,
    "rabbitmq": start_rabbitmq,
    "pulsar": start_pulsar_lite,
    "spark": start_spark_cluster,  # not a broker: a standalone master + worker for the pipeline
}


def state_dir() -> Path:
    configured = os.environ.get("LOADGEN_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "loadgen" / "brokers"


def _check_kind(kind: str) -> None:
    if kind not in DEFAULT_PORTS:
        raise ConfigError(
            "no local broker of this kind", path="KIND", value=kind, allowed=sorted(DEFAULT_PORTS)
        )


def status(kind: str) -> LocalBroker | None:
    _check_kind(kind)
    path = state_dir() / f"{kind}.json"
    if not path.exists():
        return None
    broker = LocalBroker(**json.loads(path.read_text()))
    if process_alive(broker.pid):
        return broker
    path.unlink(missing_ok=True)
    return None


def up(kind: str, port: int | None = None) -> LocalBroker:
    running = status(kind)
    if running is not None:
        return running
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    data_dir = folder / kind
    broker = STARTERS[kind](port or DEFAULT_PORTS[kind], data_dir, detach=True)
    (folder / f"{kind}.json").write_text(json.dumps(asdict(broker)))
    return broker


def down(kind: str) -> bool:
    broker = status(kind)
    if broker is None:
        return False
    broker.stop()
    (state_dir() / f"{kind}.json").unlink(missing_ok=True)
    return True
