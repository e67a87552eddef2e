"""NATS JetStream driver (nats-py): a stream per topic, a subject per partition, durable pull
consumers per subscription; see ``loadgen_drivers.nats.driver`` for its semantics.

The entry point's class: what the engine knows about NATS without connecting. It imports no
client (nats-py is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from loadgen.base.errors import MissingExtra
from loadgen.driver_api import BaseDriver, LocalStarter, require_address


class Driver(BaseDriver):
    """Selected by ``driver: nats`` or by OMB's NATS JetStream ``driverClass``."""

    display_name = "NATS JetStream"
    url_schemes = ("nats",)
    omb_driver_classes = ("io.openmessaging.benchmark.driver.nats.NatsBenchmarkDriver",)
    client_distributions = ("nats-py",)
    config_model = "loadgen_drivers.nats.config:NatsConfig"
    # 4222 is nats-server's own default: a developer's nats-server already holds it, so the
    # local broker takes the port beside it (as Kafka's takes 19092 beside 9092)
    local_broker = LocalStarter("loadgen_drivers.nats.local.server:start_nats", 14222)
    secured_local_broker = LocalStarter(
        "loadgen_drivers.nats.local.server:start_secure_nats", 14223
    )

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The URL's address part is ``natsHostUrl`` (``nats://user:pass@h1:4222,h2:4222``)."""
        require_address(url)
        return {**config, "natsHostUrl": url}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        if importlib.util.find_spec("nats") is None:
            raise MissingExtra("nats-py", "nats")
        from loadgen_drivers.nats.driver import NatsDriver  # imports nats-py

        return NatsDriver


__all__ = ["Driver"]
