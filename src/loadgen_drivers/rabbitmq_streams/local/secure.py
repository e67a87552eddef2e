"""The secured local RabbitMQ Streams broker (``loadgen brokers up rabbitmq-streams --secure``):
the same node with its stream listener behind TLS (the folder's CA, made by openssl unless
there) and, instead of ``guest``, a user ``loadgen`` with a random password. The driver file it
writes (0600) trusts that CA and logs in.
"""

from __future__ import annotations

import secrets
from dataclasses import replace
from pathlib import Path

import yaml

from loadgen.driver_api import client_context
from loadgen.driver_api.local.certs import write_private
from loadgen.driver_api.local.process import LocalBroker, claim, free_port
from loadgen.driver_api.local.rabbitmq_node import NodeSetup, TlsListener, start_node
from loadgen.driver_api.local.secured import folder_certs, stopped_on_failure
from loadgen_drivers.rabbitmq_streams.local.server import logs_in

KIND = "rabbitmq-streams"
USER = "loadgen"
DRIVER_NAME = "rabbitmq-streams-secure"


def secure_config(tls_port: int, plain_port: int, password: str) -> str:
    """rabbitmq.conf lines: the TLS stream listener advertised as itself, a plain one on another
    port (the plugin always has one), and the node's first user instead of ``guest``."""
    return (
        f"stream.listeners.tcp.1 = 127.0.0.1:{plain_port}\n"
        "stream.advertised_host = 127.0.0.1\n"
        f"stream.advertised_port = {plain_port}\n"
        "stream.advertised_tls_host = 127.0.0.1\n"
        f"stream.advertised_tls_port = {tls_port}\n"
        f"default_user = {USER}\n"
        f"default_pass = {password}\n"
    )


def start_secure_rabbitmq_streams(
    port: int | None = None, data_dir: Path | None = None, *, detach: bool = False
) -> LocalBroker:
    """Start the node with TLS streams on 127.0.0.1:``port``; return once ``loadgen`` logs in
    over TLS with the folder's CA."""
    chosen, folder, temporary = claim(KIND, port, data_dir)
    with stopped_on_failure(temporary):
        ca, pair = folder_certs(folder)
        password = secrets.token_urlsafe(18)
        context = client_context(cafile=str(ca))
        section = {
            "uris": [f"rabbitmq-stream+tls://{USER}:{password}@127.0.0.1:{chosen}/%2F"],
            "tls": {"caFile": str(ca)},
        }
        started = start_node(
            KIND,
            chosen,
            folder,
            detach=detach,
            setup=NodeSetup(
                config=secure_config(chosen, free_port(), password),
                plugins=["rabbitmq_stream"],
                amqp_port=free_port(),
                tls=TlsListener(chosen, ca, pair.cert, pair.key, listener="stream.listeners.ssl"),
            ),
            driver_config=lambda _port: section,
            ready=lambda port: logs_in("127.0.0.1", port, USER, password, context),
            waiting_for="TLS stream-protocol login",
        )
        driver_file = folder / f"{DRIVER_NAME}.yaml"
        document = {"name": DRIVER_NAME, "driver": KIND, **section}
        write_private(driver_file, yaml.safe_dump(document, sort_keys=False))
    return replace(started, temporary_dir=temporary, driver_file=str(driver_file))
