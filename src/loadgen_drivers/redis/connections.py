"""redis-py connections with OMB's pool limits, and what a failed connect means.

Every producer and consumer takes a connection of its own for its life (a consumer's blocks in
``XREADGROUP``; a producer's carries its pipeline and must not interleave with another's
replies), and admin commands borrow one for a moment. :class:`Pool` opens at most
``jedisPoolMaxTotal`` at once and keeps at most ``jedisPoolMaxIdle`` released ones open.
A failed connect is told apart here, once for all: a refused login (exit 4), a failed TLS
handshake (exit 7), anything else unreachable (exit 3); the password is never in a message.
"""

from __future__ import annotations

import ssl
import threading
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, DriverError
from loadgen_drivers.redis.config import RedisConfig

IO_TIMEOUT_S = 30.0
"""How long a reply may take beyond a read's own ``BLOCK`` before the connection counts as
broken."""


def address_of(config: RedisConfig) -> str:
    host = config.redis_host
    return f"[{host}]:{config.redis_port}" if ":" in host else f"{host}:{config.redis_port}"


def connection_settings(config: RedisConfig, connect_timeout_s: float) -> dict[str, Any]:
    """redis-py ``Connection`` arguments: one connect attempt (no retries: a refusal is
    reported, not retried), RESP2, TLS from the ``tls`` block."""
    settings: dict[str, Any] = {
        "host": config.redis_host,
        "port": config.redis_port,
        "db": config.db,
        "username": config.redis_user,
        "password": config.redis_pass,
        "socket_connect_timeout": connect_timeout_s,
        "socket_timeout": config.block_ms / 1000 + IO_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),
        "client_name": "loadgen",
        "protocol": 2,  # the replies' shapes the driver reads (redis-py 8 speaks RESP3 unless told)
    }
    tls = config.tls
    if tls is not None:
        settings |= {
            "ssl_ca_certs": tls.ca_file,
            "ssl_certfile": tls.cert_file,
            "ssl_keyfile": tls.key_file,
            "ssl_cert_reqs": "required" if tls.verify else "none",
            "ssl_check_hostname": tls.verify and tls.check_hostname,
            "ssl_exclude_verify_flags": [ssl.VERIFY_X509_STRICT],  # as client_context does
        }
    return settings


def connect(config: RedisConfig, connect_timeout_s: float) -> redis.Connection:
    """A connected, logged-in connection (``AUTH``, ``SELECT``), or the error of its kind."""
    kind = redis.SSLConnection if config.tls is not None else redis.Connection
    connection = kind(**connection_settings(config, connect_timeout_s))
    try:
        connection.connect()
    except redis.AuthenticationError as error:
        connection.disconnect()
        user = config.redis_user or "default"
        raise BrokerLoginRefused("redis", address_of(config), user, str(error)) from None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
        connection.disconnect()
        if _tls_failure(error):
            raise BrokerTlsFailed("redis", address_of(config), str(error)) from None
        raise BrokerUnreachable("redis", address_of(config), str(error)) from None
    except redis.ResponseError as error:  # SELECT of a database the server does not have
        connection.disconnect()
        raise DriverError("redis", f"{address_of(config)}: {error}") from None
    return connection


def _tls_failure(error: BaseException) -> bool:
    """redis-py wraps the ``ssl.SSLError`` of a handshake in a ``ConnectionError``."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError) or "SSL" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class Pool:
    """At most ``jedisPoolMaxTotal`` connections open at once, ``jedisPoolMaxIdle`` kept idle."""

    def __init__(self, config: RedisConfig, connect_timeout_s: float) -> None:
        self._config = config
        self._connect_timeout_s = connect_timeout_s
        self._idle: list[redis.Connection] = []
        self._open = 0
        self._lock = threading.Lock()

    def take(self, purpose: str) -> redis.Connection:
        """A connection for ``purpose`` (a producer, a consumer, admin): an idle one, or a new
        one unless the pool is full."""
        limit = self._config.jedis_pool_max_total
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if limit is not None and self._open >= limit:
                raise DriverError(
                    "redis",
                    f"jedisPoolMaxTotal is {limit} and all {limit} connections are in use: a "
                    f"{purpose} needs one more (every producer and consumer holds one; raise "
                    "jedisPoolMaxTotal in the driver file)",
                )
            self._open += 1
        try:
            return connect(self._config, self._connect_timeout_s)
        except BaseException:
            with self._lock:
                self._open -= 1
            raise

    def give_back(self, connection: redis.Connection) -> None:
        """Keep ``connection`` for reuse, or close it when the idle ones are enough (or it
        broke)."""
        limit = self._config.jedis_pool_max_idle
        with self._lock:
            if connection.is_connected and (limit is None or len(self._idle) < limit):
                self._idle.append(connection)
                return
            self._open -= 1
        connection.disconnect()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
        for connection in idle:
            connection.disconnect()
