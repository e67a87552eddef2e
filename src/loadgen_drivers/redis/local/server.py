"""A local Redis: Debian's ``redis-server`` as a child process bound to 127.0.0.1.

No persistence unless asked (``persistence=True``: an append-only file, fsynced every second):
a benchmark broker that writes RDB snapshots in the middle of a run measures the fork, not
the streams. Its working directory (where a snapshot or AOF would go) and its log are in its
folder; it is ready once ``PING`` answers, and stopped by pid. :mod:`.secure` starts the same
server behind TLS and an ACL user.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.base.errors import LocalBrokerError, MissingExtra
from loadgen.driver_api.local.process import LocalBroker, claim, spawn_logged, wait_until

try:
    import redis
except ImportError:  # redis-py comes with the redis extra
    raise MissingExtra("redis", "redis") from None

SERVER = Path("/usr/bin/redis-server")
INSTALL_HINT = "apt-get update && apt-get install -y redis-server"
READY_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Login:
    """How the readiness check logs in: a user (``None``: ``default``), a password, TLS
    (nothing verified: a server with an expired certificate must come up too)."""

    user: str | None = None
    password: str | None = None
    tls: bool = False


def require_server() -> None:
    if not SERVER.exists():
        raise LocalBrokerError(
            "redis", f"{SERVER} is not installed; install it with: {INSTALL_HINT}"
        )


def start_redis(
    port: int | None = None,
    data_dir: Path | None = None,
    *,
    detach: bool = False,
    host: str = "127.0.0.1",
    password: str | None = None,
    persistence: bool = False,
) -> LocalBroker:
    """Start a server on ``host``:``port`` (a free one by default); return once it answers
    ``PING``. ``password``: ``requirepass`` (the ``default`` user's); ``detach``: it outlives
    this process (``loadgen brokers up``)."""
    require_server()
    chosen, folder, temporary = claim("redis", port, data_dir, host=host)
    listener = ["--port", str(chosen)]
    config: dict[str, Any] = {"redisHost": host, "redisPort": chosen}
    if password is not None:
        listener += ["--requirepass", password]
        config["redisPass"] = password
    return launch(
        chosen, folder, temporary, host, listener, config, Login(password=password),
        detach=detach, persistence=persistence,
    )  # fmt: skip


def launch(
    port: int,
    folder: Path,
    temporary: str | None,
    host: str,
    listener: list[str],
    config: dict[str, Any],
    login: Login,
    *,
    detach: bool,
    persistence: bool = False,
) -> LocalBroker:
    """``redis-server`` with ``listener`` (its ports, TLS and login arguments), no persistence
    unless asked; once it answers ``PING`` as ``login``, the broker whose driver section is
    ``config``. Stopped, its folder removed, when it does not come up."""
    log_path = folder / f"redis-{port}.log"
    command = [
        str(SERVER), "--bind", host, *listener, "--dir", str(folder), "--daemonize", "no",
        "--logfile", "", "--save", "", "--appendonly", "yes" if persistence else "no",
    ]  # fmt: skip
    process = spawn_logged(command, log_path, detach=detach)
    broker = LocalBroker(
        "redis", f"{host}:{port}", process.pid, str(log_path), config, temporary,
        server=f"redis-server {server_version()}",
    )  # fmt: skip
    try:
        wait_until(
            "redis",
            lambda: answers(host, port, login),
            alive=lambda: process.poll() is None,
            timeout_s=READY_TIMEOUT_S,
            failure=f"no PING answer on {host}:{port} within {READY_TIMEOUT_S:.0f} s",
            log_path=log_path,
        )
    except LocalBrokerError:
        broker.stop()
        raise
    return broker


def answers(host: str, port: int, login: Login) -> bool:
    tls = {"ssl": True, "ssl_cert_reqs": "none", "ssl_check_hostname": False} if login.tls else {}
    try:
        with redis.Redis(
            host, port, username=login.user, password=login.password, socket_timeout=1.0, **tls
        ) as client:
            return client.ping()
    except redis.RedisError:
        return False


def server_version() -> str:
    """``7.0.15`` from ``Redis server v=7.0.15 sha=...``."""
    done = subprocess.run([str(SERVER), "--version"], capture_output=True, text=True, timeout=10)
    words = [word for word in done.stdout.split() if word.startswith("v=")]
    return words[0].removeprefix("v=") if words else "unknown"
