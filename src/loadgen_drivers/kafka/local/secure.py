"""A local secured Kafka endpoint: tansu behind :mod:`loadgen_drivers.kafka.local.front` (TLS +
SASL).

tansu serves neither TLS nor SASL users, so the front listens on the endpoint's port, logs
clients in and relays them to tansu on a port of its own; tansu advertises the front's port, so
the brokers and coordinators in its answers point clients back at the front. The folder gets a
fresh CA and server certificate, a users file (mode 0600) with one user and a random password,
and a ready driver YAML (mode 0600: it holds the password) written as a Java user would write
it, with ``sasl.jaas.config`` and a PEM truststore.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import yaml

from loadgen.driver_api.local.certs import Pair, write_private
from loadgen.driver_api.local.process import LocalBroker, claim, stop_process
from loadgen.driver_api.local.secured import (
    STOP_TIMEOUT_S,
    await_front,
    folder_certs,
    start_front,
    stopped_on_failure,
)
from loadgen_drivers.kafka.local.driver_file import driver_yaml, properties, sasl_ssl_settings
from loadgen_drivers.kafka.local.tansu import TANSU_CLIENT_SETTINGS, start_tansu

DRIVER_NAME = "kafka-secure-local"


def start_secure_kafka(
    port: int | None = None,
    log_dir: Path | None = None,
    *,
    detach: bool = False,
    server: Pair | None = None,
    user: str = "loadgen",
) -> LocalBroker:
    """Start tansu and the front on 127.0.0.1:``port`` (a free one by default); return once the
    front completes TLS handshakes.

    ``server`` replaces the server certificate (an expired one, for tests); the CA is then the
    one already in ``log_dir``, made there by :func:`make_certs`. ``detach`` starts both in
    their own sessions so they outlive this process (``loadgen brokers up``).
    """
    chosen, folder, temporary = claim("kafka", port, log_dir)
    password = secrets.token_urlsafe(24)
    with stopped_on_failure(temporary) as undo:
        ca, server = folder_certs(folder, server)
        users = write_private(folder / "users.json", json.dumps({user: password}))
        tansu = start_tansu(log_dir=folder, detach=detach, advertised_port=chosen)
        undo.callback(tansu.stop, STOP_TIMEOUT_S)
        log_path = folder / f"kafka-front-{chosen}.log"
        arguments = [
            "--listen", f"127.0.0.1:{chosen}", "--upstream", tansu.address,
            "--cert", str(server.cert), "--key", str(server.key), "--users", str(users),
        ]  # fmt: skip
        front = start_front("loadgen_drivers.kafka.local.front", arguments, log_path, detach=detach)
        undo.callback(stop_process, front.pid, STOP_TIMEOUT_S)
        text = driver_yaml(DRIVER_NAME, driver_config(f"127.0.0.1:{chosen}", ca, user, password))
        driver_file = write_private(folder / f"{DRIVER_NAME}.yaml", text)
        section = {k: v for k, v in yaml.safe_load(text).items() if k not in ("name", "driver")}
        broker = LocalBroker(
            kind="kafka",
            address=f"127.0.0.1:{chosen}",
            pid=front.pid,
            log_path=str(log_path),
            driver_config=section,
            temporary_dir=temporary,
            helper_pids=[tansu.pid],
            driver_file=str(driver_file),
        )
        await_front(front, broker)
    return broker


def driver_config(address: str, ca: Path, user: str, password: str) -> dict[str, Any]:
    """The driver section for the endpoint: Java's SASL_SSL settings, then tansu's own."""
    common = {"bootstrap.servers": address, **sasl_ssl_settings(ca, user, password)}
    return {"replicationFactor": 1, "commonConfig": properties(common), **TANSU_CLIENT_SETTINGS}
