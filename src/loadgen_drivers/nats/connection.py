"""Opening a nats-py connection, and telling a refused login or TLS handshake from a dead server.

nats-py reports every failed attempt to its ``error_cb`` and, with reconnects allowed, keeps
trying even its first connection until told to stop: so the reachability check connects once
without reconnects and names what failed; the run's connection allows reconnects (a server
restart is survived) and is given up after the connect timeout, the errors it met naming why.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

import nats
from nats.aio.client import Client

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable
from loadgen.driver_api import client_context
from loadgen_drivers.nats.config import NatsConfig, mask_password

log = logging.getLogger("loadgen.nats")

AUTH_MARKS = ("authorization violation", "authentication", "user authentication expired")


def _not_the_ssl_eof_notice(record: logging.LogRecord) -> bool:
    """asyncio warns "returning true from eof_received() has no effect when using ssl" when a
    TLS server closes a connection nats-py reads (a refused login): the error says it all."""
    return "eof_received()" not in record.getMessage()


logging.getLogger("asyncio").addFilter(_not_the_ssl_eof_notice)


def shown_servers(config: NatsConfig) -> str:
    """The server list as an error shows it: passwords masked."""
    return ",".join(mask_password(url) for url in config.servers)


def tls_context(config: NatsConfig) -> ssl.SSLContext | None:
    """The client context for a TLS connection; ``None`` without TLS. Raises ``OSError`` or
    ``ssl.SSLError`` for files that do not load."""
    if not config.wants_tls:
        return None
    settings = config.tls
    context = client_context(cafile=settings.ca_file if settings else None)
    if settings and settings.cert_file:
        context.load_cert_chain(settings.cert_file, settings.key_file)
    if settings and not settings.verify_hostname:
        context.check_hostname = False
    return context


async def connect(config: NatsConfig, timeout_s: float, *, reconnect: bool) -> Client:
    """A connection to ``config``'s servers within ``timeout_s``, or the loadgen error that
    says why not."""
    errors: list[BaseException] = []

    async def on_error(error: BaseException) -> None:
        errors.append(error)
        if len(errors) == 1 or log.isEnabledFor(logging.DEBUG):
            log.debug("nats: %r", error)

    options: dict[str, object] = {
        "servers": config.servers,
        "connect_timeout": max(0.1, min(timeout_s, 5.0)),
        "allow_reconnect": reconnect,
        "error_cb": on_error,
        "tls": tls_context(config),
        "user": config.user,
        "password": config.password,
        "token": config.token,
        "pending_size": 8 * 1024 * 1024,  # sends queue up while a reconnect is under way
    }
    if not reconnect:
        options["max_reconnect_attempts"] = 0
    try:
        return await asyncio.wait_for(nats.connect(**options), timeout_s)
    except Exception as error:  # TimeoutError included
        raise failure(config, [*errors, error]) from None


def failure(
    config: NatsConfig, errors: list[BaseException]
) -> BrokerLoginRefused | BrokerTlsFailed | BrokerUnreachable:
    """The loadgen error a failed connection amounts to: a refused login or TLS handshake
    among ``errors`` wins over the timeouts and refusals that follow it."""
    shown = shown_servers(config)
    for error in errors:
        text = str(error).lower()
        if any(mark in text for mark in AUTH_MARKS):
            return BrokerLoginRefused("nats", shown, config.user, str(error))
    for error in errors:
        if isinstance(error, ssl.SSLError) or "ssl" in type(error).__name__.lower():
            return BrokerTlsFailed("nats", shown, repr(error))
    detail = "; ".join(dict.fromkeys(repr(e) for e in errors if str(e) or repr(e)))
    return BrokerUnreachable("nats", shown, detail or "no connection")
