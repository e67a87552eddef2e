"""Apache Kafka itself on this host, in KRaft mode: ``loadgen brokers up kafka --upstream``.

One JVM per node (:mod:`.cluster` lays them out), each with its own port, folder, log and pid;
``secure`` puts Kafka's own SASL_SSL listener in front of clients (PLAIN from the listener's
JAAS line, SCRAM-SHA-256/512 credentials written into the cluster metadata by Kafka's own
``StorageTool``), with certificates from loadgen's CA. Secrets reach the JVMs through files only
their owner can read, never a command line. The printed driver file runs as it is: every node
in ``bootstrap.servers`` and, from three nodes on, three replicas with two in sync.
"""

from __future__ import annotations

import base64
import logging
import secrets
import shutil
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import ConfigError, LocalBrokerError, LocalBrokerSetupError
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.java import ServerJars, java_binary, log4j2_properties
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    port_open,
    spawn_logged,
    stop_processes,
)
from loadgen.driver_api.local.secured import folder_certs, stopped_on_failure
from loadgen.driver_api.local.server_start import last_error
from loadgen_drivers.kafka.config import parse_properties, to_librdkafka
from loadgen_drivers.kafka.local import cluster
from loadgen_drivers.kafka.local.cluster import MAX_NODES, Node, Secured
from loadgen_drivers.kafka.local.distribution import kafka_distribution
from loadgen_drivers.kafka.local.driver_file import driver_yaml, properties, sasl_ssl_settings

DRIVER_NAME = "kafka-upstream-local"
USER = "loadgen"
READY_TIMEOUT_S = 120.0
"""Every node serving and in the cluster's metadata: ~2 s for one node, longer for five JVMs
starting at once on two cores."""
NODE_LISTEN_TIMEOUT_S = 60.0
"""One node started again until it listens: ~1-3 s, longer with a large log to recover."""
FORMAT_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
"""A node's controlled shutdown moves its partition leaderships first."""
JVM_OPTIONS = (
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)
"""Kafka's own G1 settings with a heap of at most 1 GiB a node: five nodes fit beside the
clients on a 24 GiB host."""
CLIENT_SETTINGS = {
    "producerConfig": "acks=all\nlinger.ms=1\nbatch.size=131072",
    "consumerConfig": "auto.offset.reset=earliest\nenable.auto.commit=false",
}
"""OMB's Kafka settings; Apache Kafka needs none of tansu's."""


def start_upstream_kafka(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    nodes: int = 1,
    secure: bool = False,
    host: str = "127.0.0.1",
    advertised_port: int | None = None,
    keep_data: bool = False,
) -> LocalBroker:
    """Start ``nodes`` Apache Kafka nodes, the first on ``host``:``port`` (a free one by default,
    the others on free ports), and return once every node is in the cluster's metadata.

    ``detach`` starts each in its own session so it outlives this process (``loadgen brokers
    up``). ``advertised_port``: the port clients are told to connect to for the first node (a
    proxy in front of it, :mod:`harness.proxy`); its own by default. The nodes are formatted
    anew, earlier data in a ``log_dir`` given removed, unless ``keep_data``: a restart of the
    broker that stopped on this port and ``log_dir``, each node on the configuration and data
    it left (its ``nodes``, ``secure`` and ``advertised_port`` too). A failure stops whatever
    started and names the node and its log.
    """
    if not 1 <= nodes <= MAX_NODES:
        raise ConfigError(
            "a local Kafka cluster has 1 to 5 nodes", path="--nodes", value=nodes, allowed="1-5"
        )
    java = java_binary("kafka")
    distribution = kafka_distribution()
    if keep_data:
        return _restart(java, distribution, port, log_dir, detach, host)
    chosen, folder, temporary = claim("kafka", port, log_dir, host=host)
    with stopped_on_failure(temporary) as undo:
        layout = _layout(nodes, chosen, folder, host, advertised_port)
        password = secrets.token_urlsafe(24) if secure else None
        secured = _secured(folder, password) if password else None
        for node in layout:
            _write_node_files(node, layout, secured, distribution)
        _format(java, distribution, layout, password)
        config = _driver_config(layout, secured, password)
        driver_file = write_private(
            folder / f"{DRIVER_NAME}.yaml", driver_yaml(DRIVER_NAME, config)
        )
        return _serve(java, distribution, layout, config, driver_file, temporary, detach, undo)


def _restart(
    java: Path,
    distribution: ServerJars,
    port: int | None,
    log_dir: Path | None,
    detach: bool,
    host: str,
) -> LocalBroker:
    """The nodes a stopped broker left in ``log_dir`` started again, on their ports, with the
    configuration, data and driver file they had."""
    folders = log_dir.glob("node-*") if log_dir else []
    layout = sorted(map(cluster.written_node, folders), key=lambda node: node.node_id)
    driver_file = log_dir / f"{DRIVER_NAME}.yaml" if log_dir else None
    if not layout or not driver_file or not driver_file.exists():
        raise LocalBrokerSetupError("kafka", f"no Apache Kafka nodes to restart in {log_dir}")
    asked = f"{host}:{port or layout[0].port}"
    if asked != layout[0].address:
        raise LocalBrokerSetupError(
            "kafka", f"the nodes in {log_dir} serve {layout[0].address}, not {asked}"
        )
    for node in layout:
        claim("kafka", node.port, node.folder, host=node.host)  # a taken port: refused here
    document = yaml.safe_load(driver_file.read_text())
    config = {  # as written, without the line end a YAML literal block adds
        key: value.removesuffix("\n") if isinstance(value, str) else value
        for key, value in document.items()
        if key not in ("name", "driver")
    }
    with stopped_on_failure(None) as undo:
        return _serve(java, distribution, layout, config, driver_file, None, detach, undo)


def _serve(
    java: Path,
    distribution: ServerJars,
    layout: list[Node],
    config: dict[str, Any],
    driver_file: Path,
    temporary: str | None,
    detach: bool,
    undo: ExitStack,
) -> LocalBroker:
    """Each node's JVM started (stopped by ``undo`` if the start fails), once every node is in
    the cluster's metadata."""
    processes: list[subprocess.Popen] = []
    undo.callback(lambda: stop_processes([p.pid for p in processes], STOP_TIMEOUT_S))
    for node in layout:
        processes.append(_start_node(java, node, detach))
    broker = LocalBroker(
        kind="kafka",
        address=layout[0].address,
        pid=processes[0].pid,
        log_path=str(_log(layout[0])),
        driver_config=config,
        temporary_dir=temporary,
        node_pids=[process.pid for process in processes[1:]],
        driver_file=str(driver_file),
        server=f"Apache Kafka {distribution.version}",
        node_addresses=[node.address for node in layout],
    )
    _await_cluster(layout, processes, config)
    return broker


def start_secured_upstream_kafka(
    port: int | None = None, log_dir: Path | None = None, **options: Any
) -> LocalBroker:
    """:func:`start_upstream_kafka` with Kafka's own SASL_SSL listener."""
    return start_upstream_kafka(port, log_dir, secure=True, **options)


def _layout(
    count: int, first_port: int, folder: Path, host: str, advertised_port: int | None = None
) -> list[Node]:
    """The nodes, the first on ``first_port`` (:func:`claim` checked it is free) and told to
    clients as ``advertised_port``, the others and the controller listeners on free ports."""
    ports = [first_port, *(free_port(host) for _ in range(count - 1))]
    controllers = cluster.controllers(count)
    return [
        Node(
            node_id=index + 1,
            host=host,
            port=port,
            controller_port=free_port(host) if index < controllers else None,
            folder=folder / f"node-{index + 1}",
            advertised_port=advertised_port if index == 0 else None,
        )
        for index, port in enumerate(ports)
    ]


def _secured(folder: Path, password: str) -> Secured:
    """The listener's keystore (the server key, then its certificate, PEM) and its users: the
    brokers' own and :data:`USER`, both with random passwords."""
    ca, server = folder_certs(folder)
    keystore = write_private(
        folder / "server-keystore.pem", server.key.read_text() + server.cert.read_text()
    )
    users = {cluster.INTER_BROKER_USER: secrets.token_urlsafe(24), USER: password}
    return Secured(keystore=keystore, ca=ca, plain_users=users)


def _write_node_files(
    node: Node, layout: list[Node], secured: Secured | None, distribution: ServerJars
) -> None:
    """The node's configuration (its owner's only: it holds the PLAIN passwords), its log
    settings and its classpath, in a folder emptied first: a node is formatted anew."""
    shutil.rmtree(node.folder, ignore_errors=True)
    node.folder.mkdir(parents=True)
    configuration = cluster.server_properties(node, layout, secured)
    write_private(node.folder / "server.properties", configuration)
    (node.folder / "log4j2.properties").write_text(log4j2_properties(_log(node)))
    (node.folder / "classpath.args").write_text(f"-cp {distribution.classpath_text}\n")


def _log(node: Node) -> Path:
    return node.folder / "server.log"


def _format(java: Path, distribution: ServerJars, layout: list[Node], password: str | None) -> None:
    """Kafka's ``StorageTool format`` on every node at once, with one new cluster id; with a
    ``password``, SCRAM credentials for :data:`USER` too, passed in an argument file only its
    owner can read (never on a command line) and removed after."""
    # one attached to its option: an id that starts with "-" (1 in 32) is an option otherwise
    cluster_id = base64.urlsafe_b64encode(secrets.token_bytes(16)).rstrip(b"=").decode()
    scram = [
        f"--add-scram={mechanism}=[name={USER},password={password}]"
        for mechanism in cluster.SASL_MECHANISMS[1:]
    ] if password else []  # fmt: skip
    running = []
    for node in layout:
        arguments = [
            "-cp", distribution.classpath_text, "kafka.tools.StorageTool", "format",
            f"--cluster-id={cluster_id}", "-c", str(node.folder / "server.properties"), *scram,
        ]  # fmt: skip
        argfile = write_private(node.folder / "format.args", "\n".join(arguments) + "\n")
        log_path = node.folder / "format.log"
        running.append((node, argfile, log_path, spawn_logged(
            [str(java), f"@{argfile}"], log_path, detach=False
        )))  # fmt: skip
    try:
        for node, _, log_path, process in running:
            code = process.wait(FORMAT_TIMEOUT_S)
            if code != 0:
                raise LocalBrokerError(
                    "kafka",
                    f"formatting node {node.node_id}'s storage failed (exit {code}): "
                    f"{last_error([log_path])} (log {log_path})",
                )
    finally:
        for _, argfile, _, process in running:
            if process.poll() is None:
                process.kill()
                process.wait()
            argfile.unlink(missing_ok=True)


def start_node_again(folder: Path, timeout_s: float = NODE_LISTEN_TIMEOUT_S) -> int:
    """The node whose configuration and data are in ``folder`` (``node-N`` of a broker
    :func:`start_upstream_kafka` started) started again, detached, on its port; its pid, once
    it listens. Its port taken, it exiting or ``timeout_s`` passing first raises
    :class:`LocalBrokerError` naming the node and its log (the process stopped)."""
    node = cluster.written_node(folder)
    claim("kafka", node.port, node.folder, host=node.host)  # a taken port: refused here
    process = _start_node(java_binary("kafka"), node, detach=True)
    deadline = time.monotonic() + timeout_s
    while not port_open(node.port, node.host):
        code = process.poll()
        if code is not None:
            raise LocalBrokerError(
                "kafka",
                f"node {node.node_id} exited at its restart (exit {code}): "
                f"{last_error([_log(node)])} (log {_log(node)})",
            )
        if time.monotonic() > deadline:
            stop_processes([process.pid], STOP_TIMEOUT_S)
            raise LocalBrokerError(
                "kafka",
                f"node {node.node_id} did not listen on {node.address} within {timeout_s:.0f} s "
                f"of its restart (log {_log(node)})",
            )
        time.sleep(0.05)
    return process.pid


def _start_node(java: Path, node: Node, detach: bool) -> subprocess.Popen:
    command = [
        str(java), *JVM_OPTIONS,
        f"-Dlog4j2.configurationFile={node.folder / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={node.folder}",
        f"@{node.folder / 'classpath.args'}",
        "kafka.Kafka", str(node.folder / "server.properties"),
    ]  # fmt: skip
    return spawn_logged(command, node.folder / "stdout.log", detach=detach)


def _driver_config(
    layout: list[Node], secured: Secured | None, password: str | None
) -> dict[str, Any]:
    common: dict[str, str] = {"bootstrap.servers": ",".join(node.address for node in layout)}
    if secured and password:
        common.update(sasl_ssl_settings(secured.ca, USER, password))
    replicas = cluster.replication(len(layout))
    topic = {"topicConfig": "min.insync.replicas=2"} if replicas >= cluster.QUORUM else {}
    return {
        "replicationFactor": replicas,
        "commonConfig": properties(common),
        **topic,
        **CLIENT_SETTINGS,
    }


def _await_cluster(
    layout: list[Node], processes: list[subprocess.Popen], config: dict[str, Any]
) -> None:
    """Return once every node's listener accepts and the metadata lists every node, asked as
    the printed driver file's ``commonConfig`` connects (its login included); raise
    :class:`LocalBrokerError` naming the node whose process exited, or the nodes missing at
    :data:`READY_TIMEOUT_S`."""
    from confluent_kafka.admin import AdminClient

    common = parse_properties(config["commonConfig"])
    settings = to_librdkafka("commonConfig", common, DRIVER_NAME)
    deadline = time.monotonic() + READY_TIMEOUT_S
    admin = None
    joined: set[int] = set()
    while time.monotonic() < deadline:
        _check_alive(layout, processes)
        if all(port_open(node.port, node.host) for node in layout):
            admin = admin or AdminClient({**settings, "logger": _quiet()})
            try:
                joined = set(admin.list_topics(timeout=2).brokers)
            except Exception:  # not yet serving metadata; the deadline bounds the wait
                joined = set()
            if len(joined) == len(layout):
                return
        time.sleep(0.2)
    missing = [node.node_id for node in layout if node.node_id not in joined]
    raise LocalBrokerError(
        "kafka",
        f"node(s) {missing} not in the cluster after {READY_TIMEOUT_S:.0f} s "
        f"(logs under {layout[0].folder.parent})",
    )


def _check_alive(layout: list[Node], processes: list[subprocess.Popen]) -> None:
    for node, process in zip(layout, processes, strict=True):
        code = process.poll()
        if code is not None:
            raise LocalBrokerError(
                "kafka",
                f"node {node.node_id} exited at start (exit {code}): {last_error([_log(node)])} "
                f"(log {_log(node)})",
            )


def _quiet() -> logging.Logger:
    """A logger for the readiness client: its connection refusals while nodes start are
    expected, not news."""
    quiet = logging.getLogger("loadgen.kafka.upstream.readiness")
    quiet.setLevel(logging.CRITICAL)
    return quiet
