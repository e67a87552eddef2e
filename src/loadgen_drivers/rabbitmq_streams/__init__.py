"""RabbitMQ Streams driver (rstream, the stream protocol): a topic's partitions are streams
``<topic>-<i>`` (plain, or one super stream's), publisher confirms, sub-entry batching, offsets
tracked on the server under the subscription's name; see its ``driver`` module.

The entry point's class: what the engine knows about RabbitMQ Streams without connecting. It
imports no client (rstream is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from loadgen.base.errors import MissingExtra
from loadgen.driver_api import BaseDriver, LocalStarter, require_address


class Driver(BaseDriver):
    """Selected by ``driver: rabbitmq-streams`` (OMB has no RabbitMQ Streams driver class)."""

    display_name = "RabbitMQ Streams"
    url_schemes = ("rabbitmq-stream", "rabbitmq-stream+tls")
    client_distributions = ("rstream",)
    config_model = "loadgen_drivers.rabbitmq_streams.config:StreamsConfig"
    local_broker = LocalStarter(
        "loadgen_drivers.rabbitmq_streams.local.server:start_rabbitmq_streams", 5552
    )
    secured_local_broker = LocalStarter(
        "loadgen_drivers.rabbitmq_streams.local.secure:start_secure_rabbitmq_streams", 5551
    )
    # a URL run and a probe need nothing beyond the driver's own defaults (confirms on, a
    # 10,000-message window, 2 GB retention per stream): RabbitMQ's stream clients' settings

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The URL is the one stream URI (``rabbitmq-stream+tls://``: its CA from the ``tls``
        block of ``-d FILE``)."""
        require_address(url)
        return {**config, "uris": [url]}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        if importlib.util.find_spec("rstream") is None:
            raise MissingExtra("rstream", "rabbitmq-streams")
        from loadgen_drivers.rabbitmq_streams.driver import StreamsDriver  # imports rstream

        return StreamsDriver


__all__ = ["Driver"]
