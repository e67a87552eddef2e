"""A local RabbitMQ: Debian's ``rabbitmq-server`` as a child process bound to 127.0.0.1.

The node runs as the calling user with its own name, ports, data and logs in a scratch folder
(HOME there too, for the Erlang cookie), so it never touches a system RabbitMQ and every start is
clean. Node, distribution port and epmd all listen on loopback only; the AMQP listener may be
given another address (a bridge that simulated hosts reach, :mod:`harness.hosts`). epmd
outlives the node; when this start launched it, :meth:`LocalBroker.stop` stops it too. A
:class:`TlsListener` adds an ``amqps`` listener on 127.0.0.1 beside the plain one (none by
default).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from loadgen.base.errors import LocalBrokerError, MissingExtra
from loadgen.driver_api.local.process import (
    LocalBroker,
    claim,
    free_port,
    port_open,
    spawn_logged,
    wait_until,
)

try:
    import pika
    from pika.exceptions import AMQPError
except ImportError:  # pika comes with the rabbitmq extra
    raise MissingExtra("pika", "rabbitmq") from None

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
INSTALL_HINT = "apt-get update && apt-get install -y rabbitmq-server"
EPMD_PORT = 4369
READY_TIMEOUT_S = 60.0
LOCAL_DRIVER_SETTINGS = {"producerCreationDelay": 0, "consumerCreationDelay": 0}
"""A local node opens connections in a few ms: OMB's 100 ms pacing would only slow tests."""


@dataclass(frozen=True)
class TlsListener:
    """An ``amqps`` listener on 127.0.0.1:``port`` with these PEM files; ``verify_peer`` makes
    the node check a client certificate when one is sent (it never demands one)."""

    port: int
    cacertfile: Path
    certfile: Path
    keyfile: Path

    def config(self) -> str:
        """rabbitmq.conf lines (new-style sysctl format)."""
        return (
            f"listeners.ssl.1 = 127.0.0.1:{self.port}\n"
            f"ssl_options.cacertfile = {self.cacertfile}\n"
            f"ssl_options.certfile = {self.certfile}\n"
            f"ssl_options.keyfile = {self.keyfile}\n"
            "ssl_options.verify = verify_peer\n"
            "ssl_options.fail_if_no_peer_cert = false\n"
        )


def node_name(port: int) -> str:
    return f"loadgen{port}@localhost"


def rabbitmq_installed() -> bool:
    return SERVER.exists()


def start_rabbitmq(
    port: int | None = None,
    data_dir: Path | None = None,
    *,
    detach: bool = False,
    host: str = "127.0.0.1",
    tls: TlsListener | None = None,
) -> LocalBroker:
    """Start a node with AMQP on ``host``:``port`` (a free one by default); return once it
    accepts logins.

    ``detach`` starts it in its own session so it outlives this process (``loadgen brokers up``).
    """
    if not rabbitmq_installed():
        raise LocalBrokerError(
            "rabbitmq", f"{SERVER} is not installed; install it with: {INSTALL_HINT}"
        )
    chosen, folder, temporary = claim("rabbitmq", port, data_dir, host=host)
    (folder / "home").mkdir(parents=True, exist_ok=True)
    epmd_was_running = port_open(EPMD_PORT)
    started = time.time()
    log_path = folder / f"rabbitmq-{chosen}.log"
    environment = _node_environment(host, chosen, folder, tls)
    process = spawn_logged([str(SERVER)], log_path, detach=detach, env=environment)
    uri = f"amqp://guest:guest@{host}:{chosen}/%2F"

    def broker() -> LocalBroker:
        return LocalBroker(
            kind="rabbitmq",
            address=f"{host}:{chosen}",
            pid=process.pid,
            log_path=str(log_path),
            driver_config={"amqpUris": [uri], **LOCAL_DRIVER_SETTINGS},
            temporary_dir=temporary,
            helper_pids=[] if epmd_was_running else _epmd_pids(started),
        )

    try:
        _wait_ready(process, uri, log_path)
        if tls and not port_open(tls.port):
            raise LocalBrokerError("rabbitmq", f"no amqps listener on 127.0.0.1:{tls.port}")
    except LocalBrokerError:
        broker().stop()
        raise
    return broker()


def _node_environment(
    host: str, port: int, folder: Path, tls: TlsListener | None
) -> dict[str, str]:
    dist_port = free_port()
    config = folder / "rabbitmq.conf"
    config.write_text(tls.config() if tls else "")
    return {
        **os.environ,
        "HOME": str(folder / "home"),
        "RABBITMQ_NODENAME": node_name(port),
        "RABBITMQ_NODE_IP_ADDRESS": host,
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
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


def _wait_ready(process: subprocess.Popen, uri: str, log_path: Path) -> None:
    """Return once ``guest`` logs in over AMQP: the port opens before the node takes logins."""
    parameters = pika.URLParameters(uri)
    parameters.connection_attempts = 1
    parameters.socket_timeout = 1.0

    def logs_in() -> bool:
        if not port_open(parameters.port, parameters.host):
            return False
        try:
            pika.BlockingConnection(parameters).close()
        except AMQPError:
            return False
        return True

    wait_until(
        "rabbitmq",
        logs_in,
        alive=lambda: process.poll() is None,
        timeout_s=READY_TIMEOUT_S,
        failure=f"no AMQP login on {uri} within {READY_TIMEOUT_S:.0f} s",
        log_path=log_path,
        poll_s=0.1,
    )


def _epmd_pids(started_after: float) -> list[int]:
    """epmd daemons this start launched (Erlang starts one when none listens)."""
    return [
        p.pid
        for p in psutil.process_iter(["name", "create_time"])
        if p.info["name"] == "epmd" and p.info["create_time"] >= started_after - 1
    ]


def rabbitmqctl(broker: LocalBroker, *args: str, timeout_s: float = 60.0) -> str:
    """Run ``rabbitmqctl`` against a node :func:`start_rabbitmq` started; return its stdout.

    The node's Erlang cookie is in ``home/`` beside its log, where the start put it.
    """
    folder = Path(broker.log_path).parent
    port = int(broker.address.rsplit(":", 1)[1])
    done = subprocess.run(
        [str(SERVER.with_name("rabbitmqctl")), "-n", node_name(port), *args],
        env={**os.environ, "HOME": str(folder / "home")},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise LocalBrokerError("rabbitmq", f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout
