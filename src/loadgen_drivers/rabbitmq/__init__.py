"""RabbitMQ driver (pika): routing keys as partitions, confirms, prefetch, quorum queues.

The entry point's class: what the engine knows about RabbitMQ without connecting. It imports
no client (pika is imported by :meth:`Driver.implementation`); see
``loadgen_drivers.rabbitmq.driver``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import Any

from loadgen.base.errors import MissingExtra
from loadgen.driver_api import BaseDriver, LocalStarter, require_address


class Driver(BaseDriver):
    """Selected by ``driver: rabbitmq`` or by OMB's RabbitMQ ``driverClass``."""

    display_name = "RabbitMQ"
    url_schemes = ("amqp", "amqps")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver",)
    client_distributions = ("pika",)
    config_model = "loadgen_drivers.rabbitmq.config:RabbitMqConfig"
    local_broker = LocalStarter("loadgen_drivers.rabbitmq.local.server:start_rabbitmq", 5672)

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The URL is the one AMQP URI (``amqps://``: its CA from the query or the ``tls``
        block)."""
        require_address(url)
        return {**config, "amqpUris": [url]}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        if importlib.util.find_spec("pika") is None:
            raise MissingExtra("pika", "rabbitmq")
        from loadgen_drivers.rabbitmq.driver import RabbitMqDriver  # imports pika

        return RabbitMqDriver


__all__ = ["Driver"]
