"""A local RabbitMQ Streams broker: a node (:mod:`loadgen.driver_api.local.rabbitmq_node`) with
the stream plugin listening on 127.0.0.1:``port``, AMQP on another free port, ready once an
rstream client logs in over the stream protocol (RabbitMQ takes some 5-10 s to get there).
The node advertises 127.0.0.1:``port``, so clients that ask for a stream's leader come back to
the same listener.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

from loadgen.base.errors import MissingExtra
from loadgen.driver_api.local.process import LocalBroker, free_port, port_open
from loadgen.driver_api.local.rabbitmq_node import NodeSetup, start_node

try:
    from rstream.client import Client
except ImportError:  # rstream comes with the rabbitmq-streams extra
    raise MissingExtra("rstream", "rabbitmq-streams") from None

LOGIN_TIMEOUT_S = 2.0


def stream_config(port: int) -> str:
    """rabbitmq.conf lines: the stream listener, and what the node tells clients to reach."""
    return (
        f"stream.listeners.tcp.1 = 127.0.0.1:{port}\n"
        "stream.advertised_host = 127.0.0.1\n"
        f"stream.advertised_port = {port}\n"
    )


def start_rabbitmq_streams(
    port: int | None = None, data_dir: Path | None = None, *, detach: bool = False
) -> LocalBroker:
    """Start a node with the stream protocol on 127.0.0.1:``port`` (a free one by default);
    return once ``guest`` logs in on it."""
    chosen = port or free_port()
    return start_node(
        "rabbitmq-streams",
        chosen,
        data_dir,
        detach=detach,
        setup=NodeSetup(
            config=stream_config(chosen), plugins=["rabbitmq_stream"], amqp_port=free_port()
        ),
        driver_config=lambda port: {
            "uris": [f"rabbitmq-stream://guest:guest@127.0.0.1:{port}/%2F"]
        },
        ready=lambda port: logs_in("127.0.0.1", port, "guest", "guest"),
        waiting_for="stream-protocol login",
    )


def logs_in(
    host: str, port: int, username: str, password: str, context: ssl.SSLContext | None = None
) -> bool:
    """A stream-protocol client logs in (the port opens before the node takes logins)."""
    if not port_open(port, host):
        return False
    return asyncio.run(_login(host, port, username, password, context))


async def _login(
    host: str, port: int, username: str, password: str, context: ssl.SSLContext | None
) -> bool:
    client = Client(host, port, ssl_context=context, frame_max=1024 * 1024, heartbeat=60)
    try:
        await asyncio.wait_for(client.start(), LOGIN_TIMEOUT_S)
        await asyncio.wait_for(client.authenticate("/", username, password), LOGIN_TIMEOUT_S)
    except Exception:
        return False
    finally:
        await client.close()
    return True
