"""``loadgen brokers up|down|status``: local brokers that outlive the command that started them.

State lives in ``$LOADGEN_STATE_DIR`` (default ``~/.cache/loadgen/brokers``), one JSON file per
broker kind with its pid, address and log; a file whose process is gone is stale and removed.
A state file never holds the broker's ``driver_config`` (a secured broker's has its password or
token): the driver file it names does, readable by its owner only. State files and the folder
are the owner's only too.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.process import LocalBroker, process_alive
from loadgen.local_brokers.launcher import start_with, starter_of


def state_dir() -> Path:
    configured = os.environ.get("LOADGEN_STATE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "loadgen" / "brokers"


def _name(kind: str, secure: bool) -> str:
    """The broker's state file and data folder name: a secured one runs beside a plain one."""
    return f"{kind}-secure" if secure else kind


def status(kind: str, *, secure: bool = False) -> LocalBroker | None:
    starter_of(kind, secure=secure)
    path = state_dir() / f"{_name(kind, secure)}.json"
    if not path.exists():
        return None
    state = json.loads(path.read_text())
    broker = LocalBroker(**state)
    if process_alive(broker.pid):
        if "driver_config" in state or path.stat().st_mode & 0o077:  # left by an older loadgen
            _save(path, broker)
        return broker
    path.unlink(missing_ok=True)
    return None


def up(kind: str, port: int | None = None, *, secure: bool = False) -> LocalBroker:
    running = status(kind, secure=secure)
    if running is not None:
        return running
    folder = state_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = _name(kind, secure)
    starter = starter_of(kind, secure=secure)
    broker = start_with(starter, port or starter.port, folder / name, detach=True)
    _save(folder / f"{name}.json", broker)
    return broker


def _save(path: Path, broker: LocalBroker) -> None:
    """``broker``'s state at ``path``, its owner's only, without its driver config."""
    state = {key: value for key, value in asdict(broker).items() if key != "driver_config"}
    write_private(path, json.dumps(state))


def down(kind: str, *, secure: bool = False) -> bool:
    broker = status(kind, secure=secure)
    if broker is None:
        return False
    broker.stop()
    (state_dir() / f"{_name(kind, secure)}.json").unlink(missing_ok=True)
    return True
