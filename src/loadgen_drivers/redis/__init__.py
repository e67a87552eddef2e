"""Redis Streams driver (redis-py): stream keys as partitions, consumer groups as
subscriptions, pipelined ``XADD``.

The entry point's class: what the engine knows about Redis without connecting. It imports no
client (redis-py is imported by :meth:`Driver.implementation`); see
``loadgen_drivers.redis.driver``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from loadgen.base.errors import ConfigError, MissingExtra
from loadgen.driver_api import BaseDriver, LocalStarter, require_address

LOCAL_PORT = 16379
"""``loadgen brokers up redis``'s port: not Redis's own 6379, where Debian's redis-server
package starts a system service of its own when it is installed."""


class Driver(BaseDriver):
    """Selected by ``driver: redis`` or by OMB's Redis ``driverClass``."""

    display_name = "Redis Streams"
    url_schemes = ("redis", "rediss")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.redis.RedisBenchmarkDriver",)
    client_distributions = ("redis",)
    config_model = "loadgen_drivers.redis.config:RedisConfig"
    secret_fields = ("redisPass",)  # "Pass" is not "password": say so
    local_broker = LocalStarter("loadgen_drivers.redis.local.server:start_redis", LOCAL_PORT)
    secured_local_broker = LocalStarter(
        "loadgen_drivers.redis.local.secure:start_secure_redis", LOCAL_PORT + 1
    )

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """``redis://[user:password@]host[:port][/db]``; ``rediss://`` adds TLS (trust settings
        from the ``tls`` block of ``-d``)."""
        require_address(url)
        parts = urlsplit(url)
        try:
            port = parts.port or 6379
        except ValueError:
            port = None
        path = parts.path.strip("/")
        if port is None or not parts.hostname or (path and not path.isdecimal()):
            raise ConfigError(
                "not a Redis URL", path="URL", value=url,
                allowed=["redis://[user:password@]host[:port][/db]", "rediss://..."],
            )  # fmt: skip
        fields: dict[str, Any] = {**config, "redisHost": parts.hostname, "redisPort": port}
        if parts.username:
            fields["redisUser"] = unquote(parts.username)
        if parts.password is not None:
            fields["redisPass"] = unquote(parts.password)
        if path:
            fields["db"] = int(path)
        if parts.scheme == "rediss":
            fields["tls"] = dict(config.get("tls") or {})
        return fields

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        if importlib.util.find_spec("redis") is None:
            raise MissingExtra("redis", "redis")
        from loadgen_drivers.redis.driver import RedisDriver  # imports redis-py

        return RedisDriver


__all__ = ["Driver"]
