"""``loadgen brokers up|down|status``: local brokers that outlive the command that started them.

State lives in ``$LOADGEN_STATE_DIR`` (default ``~/.cache/loadgen/brokers``), one JSON file per
broker kind with its pid, address and log; a file whose process is gone is stale and removed.
"""

from __future__ import annotations

import importlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.driver_api import LocalStarter, driver_classes
from loadgen.local_brokers.launch import LocalBroker, process_alive

SPARK_KIND = "spark"
SPARK = LocalStarter("loadgen.local_brokers.spark:start_spark_cluster", 7077)
"""Not a driver's broker: a standalone Spark master and worker for the pipeline."""


def starters(*, secure: bool = False) -> dict[str, LocalStarter]:
    """Every local broker on offer, by kind: those the installed drivers declare, and Spark."""
    found = {
        kind: driver.secured_local_broker if secure else driver.local_broker
        for kind, driver in driver_classes().items()
    }
    offered = {kind: starter for kind, starter in found.items() if starter is not None}
    return offered if secure else {**offered, SPARK_KIND: SPARK}


def start(
    kind: str, port: int | None = None, folder: Path | None = None, **options: Any
) -> LocalBroker:
    """Start the local broker of ``kind`` on ``port`` (a free one by default), its data in
    ``folder`` (a temporary one by default); ``options``: what its starter takes besides, e.g.
    ``host``. The caller stops it."""
    return _start(_starter(kind, secure=False), port, folder, **options)


def _starter(kind: str, *, secure: bool) -> LocalStarter:
    if kind not in starters():
        raise ConfigError(
            "no local broker of this kind", path="KIND", value=kind, allowed=sorted(starters())
        )
    offered = starters(secure=secure)
    if kind not in offered:
        raise ConfigError(
            "no secured local broker of this kind",
            path="--secure",
            value=kind,
            allowed=sorted(offered),
        )
    return offered[kind]


def _start(
    starter: LocalStarter, port: int | None, folder: Path | None, **options: Any
) -> LocalBroker:
    module, _, name = starter.starter.partition(":")
    return getattr(importlib.import_module(module), name)(port, folder, **options)


def state_dir() -> Path:
    configured = os.environ.get("LOADGEN_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "loadgen" / "brokers"


def _name(kind: str, secure: bool) -> str:
    """The broker's state file and data folder name: a secured one runs beside a plain one."""
    return f"{kind}-secure" if secure else kind


def status(kind: str, *, secure: bool = False) -> LocalBroker | None:
    _starter(kind, secure=secure)
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
    starter = _starter(kind, secure=secure)
    broker = _start(starter, port or starter.port, folder / name, detach=True)
    (folder / f"{name}.json").write_text(json.dumps(asdict(broker)))
    return broker


def down(kind: str, *, secure: bool = False) -> bool:
    broker = status(kind, secure=secure)
    if broker is None:
        return False
    broker.stop()
    (state_dir() / f"{_name(kind, secure)}.json").unlink(missing_ok=True)
    return True
