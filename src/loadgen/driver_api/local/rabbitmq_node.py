"""A local RabbitMQ node: Debian's ``rabbitmq-server`` as a child process bound to 127.0.0.1.

Written once for every driver that talks to RabbitMQ (AMQP, the stream protocol): the node runs
as the calling user with its own name, ports, data and logs in a scratch folder (HOME there too,
for the Erlang cookie), so it never touches a system RabbitMQ and every start is clean. Node,
distribution port and epmd all listen on loopback only; the AMQP listener may be given another
address (a bridge that simulated hosts reach, :mod:`harness.hosts`). epmd outlives the node;
when this start launched it, :meth:`LocalBroker.stop` stops it too. What a driver adds (a
plugin, its listeners, a TLS listener) is configuration; when the node serves is the driver's
readiness check.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from loadgen.base.errors import LocalBrokerError
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    port_open,
    spawn_logged,
    wait_until,
)

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
INSTALL_HINT = "apt-get update && apt-get install -y rabbitmq-server"
EPMD_PORT = 4369
READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class TlsListener:
    """A TLS listener on 127.0.0.1:``port`` with these PEM files; ``verify_peer`` makes the node
    check a client certificate when one is sent (it never demands one). ``listener`` is the
    rabbitmq.conf key of the listener: ``listeners.ssl`` (amqps) or ``stream.listeners.ssl``."""

    port: int
    cacertfile: Path
    certfile: Path
    keyfile: Path
    listener: str = "listeners.ssl"

    def config(self) -> str:
        """rabbitmq.conf lines (new-style sysctl format)."""
        return (
            f"{self.listener}.1 = 127.0.0.1:{self.port}\n"
            f"ssl_options.cacertfile = {self.cacertfile}\n"
            f"ssl_options.certfile = {self.certfile}\n"
            f"ssl_options.keyfile = {self.keyfile}\n"
            "ssl_options.verify = verify_peer\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
        )


def node_name(port: int) -> str:
    """The node named after the broker's port (its address's), so ``rabbitmqctl`` finds it."""
    return f"loadgen{port}@localhost"


def rabbitmq_installed() -> bool:
    return SERVER.exists()


@dataclass(frozen=True)
class NodeSetup:
    """What a driver's node needs beyond a plain AMQP node."""

    config: str = ""
    """rabbitmq.conf lines (a TLS listener's are added to them)."""
    plugins: Sequence[str] | None = None
    """The plugins to enable (an enabled-plugins file of the node's own); ``None``: the
    system's file, as installed."""
    amqp_port: int | None = None
    """Where AMQP listens, when the broker's port is another protocol's; ``None``: the broker's
    port is AMQP's."""
    tls: TlsListener | None = None


def start_node(
    kind: str,
    port: int | None,
    data_dir: Path | None,
    *,
    detach: bool,
    setup: NodeSetup,
    driver_config: Callable[[int], Mapping[str, Any]],
    ready: Callable[[int], bool],
    waiting_for: str,
    host: str = "127.0.0.1",
) -> LocalBroker:
    """Start a node whose broker port is ``port`` (a free one by default) on ``host``; return
    once ``ready(port)``, with ``driver_config(port)`` as the section pointing at it.

    ``waiting_for`` names what ``ready`` checks, for the error when it never is.
    """
    if not rabbitmq_installed():
        raise LocalBrokerError(kind, f"{SERVER} is not installed; install it with: {INSTALL_HINT}")
    chosen, folder, temporary = claim(kind, port, data_dir, host=host)
    (folder / "home").mkdir(parents=True, exist_ok=True)
    epmd_was_running = port_open(EPMD_PORT)
    started = time.time()
    log_path = folder / f"{kind}-{chosen}.log"
    environment = _node_environment(host, chosen, folder, setup)
    process = spawn_logged([str(SERVER)], log_path, detach=detach, env=environment)

    def broker() -> LocalBroker:
        return LocalBroker(
            kind=kind,
            address=f"{host}:{chosen}",
            pid=process.pid,
            log_path=str(log_path),
            driver_config=dict(driver_config(chosen)),
            temporary_dir=temporary,
            helper_pids=[] if epmd_was_running else _epmd_pids(started),
        )

    try:
        wait_until(
            kind,
            lambda: ready(chosen),
            alive=lambda: process.poll() is None,
            timeout_s=READY_TIMEOUT_S,
            failure=f"no {waiting_for} on {host}:{chosen} within {READY_TIMEOUT_S:.0f} s",
            log_path=log_path,
            poll_s=0.1,
        )
        if setup.tls and not port_open(setup.tls.port):
            raise LocalBrokerError(kind, f"no TLS listener on 127.0.0.1:{setup.tls.port}")
    except LocalBrokerError:
        broker().stop()
        raise
    return broker()


def _node_environment(host: str, port: int, folder: Path, setup: NodeSetup) -> dict[str, str]:
    config = folder / "rabbitmq.conf"
    config.write_text(setup.config + (setup.tls.config() if setup.tls else ""))
    plugins = {}
    if setup.plugins is not None:
        enabled = folder / "enabled_plugins"
        enabled.write_text(f"[{','.join(setup.plugins)}].\n")
        plugins = {"RABBITMQ_ENABLED_PLUGINS_FILE": str(enabled)}
    return {
        **os.environ,
        **plugins,
        "HOME": str(folder / "home"),
        "RABBITMQ_NODENAME": node_name(port),
        "RABBITMQ_NODE_IP_ADDRESS": host,
        "RABBITMQ_NODE_PORT": str(setup.amqp_port or port),
        "RABBITMQ_DIST_PORT": str(free_port()),
        "ERL_EPMD_ADDRESS": "127.0.0.1",
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}"
        + _guest_beyond_loopback(host),
        "RABBITMQ_MNESIA_BASE": str(folder / "mnesia"),
        "RABBITMQ_LOG_BASE": str(folder / "log"),
        "RABBITMQ_CONFIG_FILE": str(config),
    }


def _guest_beyond_loopback(host: str) -> str:
    """RabbitMQ lets ``guest`` log in over loopback only; a node listening elsewhere (a bridge
    only the local host's network namespaces reach) lets it in from there too."""
    return "" if ipaddress.ip_address(host).is_loopback else " -rabbit loopback_users []"


def _epmd_pids(started_after: float) -> list[int]:
    """epmd daemons this start launched (Erlang starts one when none listens)."""
    return [
        p.pid
        for p in psutil.process_iter(["name", "create_time"])
        if p.info["name"] == "epmd" and p.info["create_time"] >= started_after - 1
    ]


def rabbitmqctl(broker: LocalBroker, *args: str, timeout_s: float = 60.0) -> str:
    """Run ``rabbitmqctl`` against a node :func:`start_node` started; return its stdout.

    The node's Erlang cookie is in ``home/`` beside its log, where the start put it.
    """
    folder = Path(broker.log_path).parent
    port = int(broker.address.rsplit(":", 1)[1])
    plugins = folder / "enabled_plugins"  # the plugins' commands too (add_super_stream)
    plugins_env = {"RABBITMQ_ENABLED_PLUGINS_FILE": str(plugins)} if plugins.exists() else {}
    done = subprocess.run(
        [str(SERVER.with_name("rabbitmqctl")), "-n", node_name(port), *args],
        env={**os.environ, **plugins_env, "HOME": str(folder / "home")},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise LocalBrokerError(broker.kind, f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
