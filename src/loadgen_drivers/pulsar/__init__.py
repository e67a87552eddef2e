"""Pulsar driver (pulsar-client); see ``loadgen_drivers.pulsar.driver`` for its semantics.

The entry point's class: what the engine knows about Pulsar without connecting. It imports no
client (pulsar-client is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.driver_api import BaseDriver, LocalStarter, require_address


class Driver(BaseDriver):
    """Selected by ``driver: pulsar`` or by OMB's Pulsar ``driverClass``."""

    display_name = "Pulsar"
    url_schemes = ("pulsar", "pulsar+ssl")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver",)
    client_distributions = ("pulsar-client",)
    config_model = "loadgen_drivers.pulsar.config:PulsarConfig"
    secret_fields = ("authentication.data",)  # a token or basic-auth JSON, under a plain key
    local_broker = LocalStarter("loadgen_drivers.pulsar.local.lite:start_pulsar_lite", 16650)
    secured_local_broker = LocalStarter(
        "loadgen_drivers.pulsar.local.secure:start_secure_pulsar", 16651
    )
    upstream_local_broker = LocalStarter(
        "loadgen_drivers.pulsar.local.upstream:start_upstream_pulsar", 26650
    )
    secured_upstream_local_broker = LocalStarter(
        "loadgen_drivers.pulsar.local.upstream:start_secured_upstream_pulsar", 26651
    )

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
