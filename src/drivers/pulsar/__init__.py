"""Pulsar driver (pulsar-client); see ``loadgen_drivers.pulsar.driver`` for its semantics.

The entry point's class: what the engine knows about Pulsar without connecting. It imports no
client (pulsar-client is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.driver_api import BaseDriver, require_address


class Driver(BaseDriver):
    """Selected by ``driver: pulsar`` or by OMB's Pulsar ``driverClass``."""

    display_name = "Pulsar"
    url_schemes = ("pulsar", "pulsar+ssl")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver",)
    client_distributions = ("pulsar-client",)
    process_capacity = 30_000  # per CPU second, C recorders: bench/process_capacity.py

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The URL is the service URL (``pulsar+ssl://``: trust settings from ``client``)."""
        require_address(url)
        return {**config, "client": {**config.get("client", {}), "serviceUrl": url}}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        from loadgen_drivers.pulsar.driver import PulsarDriver  # imports pulsar-client

        return PulsarDriver


__all__ = ["Driver"]
