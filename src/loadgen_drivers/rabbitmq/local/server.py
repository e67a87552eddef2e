"""A local RabbitMQ for the AMQP driver: a node (:mod:`loadgen.driver_api.local.rabbitmq_node`)
with AMQP on ``host``:``port``, ready once ``guest`` logs in. A :class:`TlsListener` adds an
``amqps`` listener on 127.0.0.1 beside the plain one (none by default).
"""

from __future__ import annotations

from pathlib import Path

from loadgen.base.errors import MissingExtra
from loadgen.driver_api.local.process import LocalBroker, port_open
from loadgen.driver_api.local.rabbitmq_node import (
    SERVER,
    NodeSetup,
    TlsListener,
    node_name,
    rabbitmq_installed,
    rabbitmqctl,
    start_node,
)

try:
    import pika
    from pika.exceptions import AMQPError
except ImportError:  # pika comes with the rabbitmq extra
    raise MissingExtra("pika", "rabbitmq") from None

__all__ = [
    "LOCAL_DRIVER_SETTINGS",
    "SERVER",
    "TlsListener",
    "node_name",
    "rabbitmq_installed",
    "rabbitmqctl",
    "start_rabbitmq",
]

LOCAL_DRIVER_SETTINGS = {"producerCreationDelay": 0, "consumerCreationDelay": 0}
"""A local node opens connections in a few ms: OMB's 100 ms pacing would only slow tests."""


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

    def uri(port: int) -> str:
        return f"amqp://guest:guest@{host}:{port}/%2F"

    return start_node(
        "rabbitmq",
        port,
        data_dir,
        detach=detach,
        setup=NodeSetup(tls=tls),
        driver_config=lambda port: {"amqpUris": [uri(port)], **LOCAL_DRIVER_SETTINGS},
        ready=lambda port: _logs_in(uri(port)),
        waiting_for="AMQP login",
        host=host,
    )


def _logs_in(uri: str) -> bool:
    """``guest`` logs in over AMQP: the port opens before the node takes logins."""
    parameters = pika.URLParameters(uri)
    parameters.connection_attempts = 1
    parameters.socket_timeout = 1.0
    if not port_open(parameters.port, parameters.host):
        return False
    try:
        pika.BlockingConnection(parameters).close()
    except AMQPError:
        return False
    return True
