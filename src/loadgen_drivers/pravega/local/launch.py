"""Start the local Pravega (:mod:`loadgen_drivers.pravega.local`) as a process, like the other local
brokers: a free controller port by default, a log file, and a wait until both ports accept."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from loadgen.base.errors import MissingExtra
from loadgen.driver_api.local.process import (
    LocalBroker,
    await_listening,
    claim,
    free_port,
    spawn_logged,
)

READY_TIMEOUT_S = 15.0


def pravega_driver_config(controller_uri: str) -> dict[str, Any]:
    """A Pravega driver section pointing at ``controller_uri`` (its own scope, created)."""
    return {
        "client": {"controllerURI": controller_uri, "scopeName": "loadgen"},
        "createScope": True,
    }


def start_local_pravega(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    host: str = "127.0.0.1",
    max_bytes: int | None = None,
) -> LocalBroker:
    """The controller on ``host``:``port`` (a free one by default), its segment store on a free
    port beside it; returns once both accept. ``detach``: outlives this process. ``max_bytes``:
    the store's bound (``--max-bytes``; 1 GiB when None), small to fill it in a test."""
    if importlib.util.find_spec("grpc") is None:  # the controller's gRPC, in the child
        raise MissingExtra("grpcio", "pravega")
    controller_port, folder, temporary = claim("pravega", port, log_dir, host=host)
    store_port = free_port(host)
    log_path = folder / f"pravega-{controller_port}.log"
    command = [
        sys.executable,
        "-m",
        "loadgen_drivers.pravega.local",
        "--host",
        host,
        "--controller-port",
        str(controller_port),
        "--segment-store-port",
        str(store_port),
    ]
    if max_bytes is not None:
        command += ["--max-bytes", str(max_bytes)]
    process = spawn_logged(command, log_path, detach=detach)
    uri = f"tcp://{host}:{controller_port}"
    broker = LocalBroker(
        "pravega", uri, process.pid, str(log_path), pravega_driver_config(uri), temporary
    )
    ports = [controller_port, store_port]
    await_listening("the local Pravega", broker, process, ports, READY_TIMEOUT_S, host)
    return broker
