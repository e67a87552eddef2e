"""Pravega itself on this host: ``loadgen brokers up pravega --upstream``.

Pravega's own standalone (``io.pravega.local.LocalPravegaEmulator``): a controller, a segment
store and ZooKeeper in one JVM. It reads ``singlenode.*`` settings (ports), and its segment
store's ``pravegaservice.*``, ``filesystem.*`` and ``autoScale.*`` ones, from the properties
file written here. Its tier 1 (the durable log) and ZooKeeper are in memory, so a stop loses
the streams' metadata and there is nothing to start again on; tier 2 is in files under
``data/`` (the emulator's own in-memory tier 2 kept every event in the heap until its stream
was deleted). The controller's gRPC and REST listen on every interface (the emulator binds them
so); the segment store listens on ``host``, and is published to clients there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import LocalBrokerSetupError
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.java import java_binary
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    spawn_logged,
    stop_processes,
)
from loadgen.driver_api.local.secured import stopped_on_failure
from loadgen.driver_api.local.server_start import await_serving
from loadgen_drivers.pravega.local.distribution import pravega_distribution
from loadgen_drivers.pravega.local.launch import pravega_driver_config

DRIVER_NAME = "pravega-upstream-local"
MAIN_CLASS = "io.pravega.local.LocalPravegaEmulator"
SYSTEM_SCOPE = "_system"
"""The scope the controller makes for its own streams once it runs."""
READY_TIMEOUT_S = 90.0
"""Until the controller's REST lists the ``_system`` scope: 2.7-5.9 s measured on 2 cores
(ZooKeeper, the segment store, then the controller and its system streams), longer beside a
loaded suite."""
STOP_TIMEOUT_S = 15.0
"""The emulator's shutdown hook closes the controller, segment store and ZooKeeper."""
JVM_OPTIONS = (
    "-Xms512m",
    "-Xmx2g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
"""Half the 4 GiB of Pravega standalone's start script, whose tier 2 is in memory. With tier 2
in files the heap does not grow with the data: 75 MiB used idle, 130 MiB after a run of 600k
1 KiB events (60 s at 10k msg/s, 0.9 GiB in ``data/``), where the in-memory tier 2 used
685 MiB after 150k. The segment store's cache takes 128 MiB of direct memory besides. Fits
beside clients on a 24 GiB host."""
AUTO_SCALE_DELAY_S = 10
"""How long a new segment waits before a scale request, and between two requests for one
segment (``autoScale.cooldown.time.seconds``, ``autoScale.mute.time.seconds``): Pravega's
600 s would keep a benchmark's new stream from scaling for ten minutes. The segment store
still reports a segment's rate only every two minutes (hard-coded), so a stream scales at the
earliest ~2 min after it was made."""


@dataclass(frozen=True)
class Ports:
    """What the standalone listens on: the controller's gRPC (clients' ``controllerURI``)
    and REST, the segment store and ZooKeeper."""

    host: str
    controller: int
    rest: int
    segment_store: int
    zookeeper: int

    @property
    def controller_uri(self) -> str:
        return f"tcp://{self.host}:{self.controller}"

    @property
    def rest_url(self) -> str:
        return f"http://{self.host}:{self.rest}/v1"


def start_upstream_pravega(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    host: str = "127.0.0.1",
    keep_data: bool = False,
) -> LocalBroker:
    """Start Pravega standalone with its controller on ``host``:``port`` (a free one by default,
    its REST, segment store and ZooKeeper on free ones) and return once the controller's REST
    lists its system scope. Tier 2 starts empty, earlier data in a ``log_dir`` given removed.
    ``detach`` starts it in its own session so it outlives this process (``loadgen brokers
    up``). ``keep_data`` is refused: the streams' metadata lives in memory only. A failure
    stops it and names its log."""
    if keep_data:
        raise LocalBrokerSetupError(
            "pravega", "Pravega standalone keeps its streams' metadata in memory: no data to keep"
        )
    java = java_binary("pravega")
    jars = pravega_distribution()
    chosen, folder, temporary = claim("pravega", port, log_dir, host=host)
    with stopped_on_failure(temporary) as undo:
        ports = Ports(host, chosen, free_port(host), free_port(host), free_port(host))
        config = _prepare(folder, ports, jars.classpath_text)
        process = spawn_logged(_command(java, folder), folder / "stdout.log", detach=detach)
        undo.callback(stop_processes, [process.pid], STOP_TIMEOUT_S)
        broker = LocalBroker(
            kind="pravega",
            address=ports.controller_uri,
            pid=process.pid,
            log_path=str(_log(folder)),
            driver_config=config,
            temporary_dir=temporary,
            driver_file=str(folder / f"{DRIVER_NAME}.yaml"),
            server=f"Pravega {jars.version}",
            endpoints={"controller REST API": ports.rest_url},
        )
        _await_ready(process, ports, folder)
        return broker


def _prepare(folder: Path, ports: Ports, classpath: str) -> dict[str, Any]:
    """The standalone's settings, log settings, classpath and driver file, written into
    ``folder``, with an empty tier 2 (the metadata of what it holds does not survive a stop);
    the driver section."""
    shutil.rmtree(folder / "data", ignore_errors=True)
    (folder / "tmp").mkdir(exist_ok=True)  # ZooKeeper's data: the JVM's temporary folder
    settings = _settings(ports, folder / "data")
    (folder / "standalone.properties").write_text("".join(f"{line}\n" for line in settings))
    (folder / "logback.xml").write_text(_logback(_log(folder)))
    (folder / "classpath.args").write_text(f"-cp {classpath}\n")
    config = pravega_driver_config(ports.controller_uri)
    document = {"name": DRIVER_NAME, "driver": "pravega", **config}
    write_private(folder / f"{DRIVER_NAME}.yaml", yaml.safe_dump(document, sort_keys=False))
    return config


def _settings(ports: Ports, data: Path) -> list[str]:
    """The emulator's ports, no admin gateway and no segment-store REST (both on fixed ports
    otherwise: 9999 and 6061), the segment store on ``host`` with tier 2 in ``data``, and
    :data:`AUTO_SCALE_DELAY_S`."""
    return [
        f"singlenode.controller.rpc.port={ports.controller}",
        f"singlenode.controller.rest.port={ports.rest}",
        f"singlenode.segmentStore.port={ports.segment_store}",
        f"singlenode.zk.port={ports.zookeeper}",
        "singlenode.admin.gateway.enable=false",
        "pravegaservice.rest.listener.enable=false",
        f"pravegaservice.service.listener.host.nameOrIp={ports.host}",
        f"pravegaservice.service.published.host.nameOrIp={ports.host}",
        "pravegaservice.storage.impl.name=FILESYSTEM",
        f"filesystem.root={data}",
        f"autoScale.cooldown.time.seconds={AUTO_SCALE_DELAY_S}",
        f"autoScale.mute.time.seconds={AUTO_SCALE_DELAY_S}",
    ]


def _logback(log_path: Path) -> str:
    """logback for the standalone: its log in one file, INFO and up (its distribution's level
    and pattern)."""
    return (
        "<configuration>\n"
        '  <appender name="file" class="ch.qos.logback.core.FileAppender">\n'
        f"    <file>{log_path}</file>\n"
        "    <encoder><pattern>%d %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>\n"
        "  </appender>\n"
        '  <root level="INFO"><appender-ref ref="file"/></root>\n'
        "</configuration>\n"
    )


def _command(java: Path, folder: Path) -> list[str]:
    return [
        str(java), *JVM_OPTIONS,
        f"-Djava.io.tmpdir={folder / 'tmp'}",
        f"-Dlogback.configurationFile={folder / 'logback.xml'}",
        f"-Dsinglenode.configurationFile={folder / 'standalone.properties'}",
        f"@{folder / 'classpath.args'}",
        MAIN_CLASS,
    ]  # fmt: skip


def _await_ready(process: subprocess.Popen, ports: Ports, folder: Path) -> None:
    """Return once the controller's REST lists :data:`SYSTEM_SCOPE` (made once the controller
    and the segment store serve); asked over REST because the Python client retries a refused
    connection for ~61 s, holding the GIL."""
    await_serving(
        "pravega",
        "Pravega",
        process,
        lambda: SYSTEM_SCOPE in _scopes(ports),
        READY_TIMEOUT_S,
        [_log(folder), folder / "stdout.log"],
        waiting_for=f"answer at {ports.rest_url}",
    )


def _scopes(ports: Ports) -> list[str]:
    """The scopes the controller's REST lists; none while it does not serve yet."""
    try:
        with urllib.request.urlopen(f"{ports.rest_url}/scopes", timeout=2) as answer:
            return [scope["scopeName"] for scope in json.load(answer)["scopes"]]
    except (OSError, ValueError, KeyError, urllib.error.URLError):
        return []


def _log(folder: Path) -> Path:
    return folder / "server.log"
