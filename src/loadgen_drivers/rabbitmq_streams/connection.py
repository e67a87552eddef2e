"""Stream-protocol connections: opened with rstream's low-level ``Client`` on the driver's loop,
to the node a URI names or to a stream's leader, and each failure told as loadgen's error kinds.

rstream's ``Producer`` and ``Consumer`` wrap the same ``Client`` with a coroutine, a dataclass
and (for sub-entries) a 0.5-s timer per message; the driver speaks the protocol's frames
itself so that per-message work is a list append on the way out and one recorder call per
chunk on the way in.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import replace

import rstream.connection
from rstream import exceptions
from rstream.client import Client
from rstream.utils import OnClosedErrorInfo

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, DriverError
from loadgen_drivers.rabbitmq_streams.config import Endpoint

KIND = "rabbitmq-streams"
LOGIN_WATCH_S = 0.05
FRAME_MAX = 1024 * 1024
HEARTBEAT_S = 60
READ_BYTES = 64 * 1024
"""What one socket read may take: rstream reads 256 bytes at a time (``CHUNK_SIZE``), a
coroutine call per 256 bytes of every chunk; 64 KiB drains a backlog 1.6 times as fast
(bench/results/rabbitmq-streams.md, "Reading 256 bytes at a time")."""
rstream.connection.CHUNK_SIZE = max(rstream.connection.CHUNK_SIZE, READ_BYTES)
LOGIN_REFUSALS = (
    exceptions.AuthenticationFailure,
    exceptions.SASLAuthenticationFailureLoopback,
    exceptions.VirtualHostAccessFailure,
)

OnLost = Callable[[OnClosedErrorInfo], None]


async def open_client(
    endpoint: Endpoint,
    context: ssl.SSLContext | None,
    name: str,
    on_lost: OnLost | None = None,
) -> Client:
    """A started, logged-in client; loadgen's error kinds for what goes wrong."""
    client = Client(
        endpoint.host,
        endpoint.port,
        ssl_context=context if endpoint.tls else None,
        frame_max=FRAME_MAX,
        heartbeat=HEARTBEAT_S,
        connection_name=name,
        connection_closed_handler=on_lost,
    )
    try:
        await client.start()
        await _authenticate(client, endpoint)
    except BaseException as error:
        await client.close()
        raise failure(endpoint, error) from None
    return client


async def _authenticate(client: Client, endpoint: Endpoint) -> None:
    """Log in; a node that closes the connection while the login is under way refused it.

    RabbitMQ answers wrong credentials and then closes the connection; rstream drops the answer
    when the close arrives with it in one read (its reader raises ``ConnectionClosed`` before
    handing over the bytes), and its request then waits out its 10-s timeout."""
    login = asyncio.ensure_future(
        client.authenticate(endpoint.vhost, endpoint.username, endpoint.password)
    )
    while not login.done():
        if not client.is_connection_alive():
            login.cancel()
            raise exceptions.AuthenticationFailure("the node closed the connection on the login")
        await asyncio.wait({login}, timeout=LOGIN_WATCH_S)
    login.result()


def failure(endpoint: Endpoint, error: BaseException) -> BaseException:
    """``error`` as the error kind loadgen reports it (exit 4 a refused login, 7 a failed TLS
    handshake, 3 no connection); anything else as it is."""
    if isinstance(error, LOGIN_REFUSALS):
        return BrokerLoginRefused(KIND, endpoint.shown, endpoint.username, type(error).__name__)
    if isinstance(error, ssl.SSLError):
        return BrokerTlsFailed(KIND, endpoint.shown, str(error))
    if isinstance(error, (OSError, ConnectionError, TimeoutError)):
        return BrokerUnreachable(KIND, endpoint.shown, repr(error))
    if isinstance(error, exceptions.ServerError):
        return DriverError(KIND, f"{endpoint.shown}: {type(error).__name__}")
    return error


async def leader_endpoint(client: Client, endpoint: Endpoint, stream: str) -> Endpoint:
    """Where ``stream``'s leader is, as its node advertises itself (publishers must write
    there), with ``endpoint``'s credentials."""
    try:
        leader, _ = await client.query_leader_and_replicas(stream)
    except exceptions.ServerError as error:
        raise DriverError(KIND, f"stream {stream!r}: {type(error).__name__}") from None
    return replace(endpoint, host=leader.host, port=leader.port)


class Connections:
    """A user's connections, one per node address, opened when first needed."""

    def __init__(self, context: ssl.SSLContext | None, name: str, on_lost: OnLost) -> None:
        self._context = context
        self._name = name
        self._on_lost = on_lost
        self._clients: dict[str, Client] = {}

    async def to(self, endpoint: Endpoint) -> Client:
        client = self._clients.get(endpoint.address)
        if client is None:
            client = await open_client(endpoint, self._context, self._name, self._on_lost)
            self._clients[endpoint.address] = client
        return client

    async def close(self) -> None:
        clients, self._clients = self._clients, {}
        for client in clients.values():
            if client.is_connection_alive():
                await client.close()
