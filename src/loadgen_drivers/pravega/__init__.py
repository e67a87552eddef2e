"""Pravega driver (the ``pravega`` client); see ``loadgen_drivers.pravega.driver`` for its
semantics.

The entry point's class: what the engine knows about Pravega without connecting. It imports no
client (pravega is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.driver_api import BaseDriver, LocalStarter, require_address


class Driver(BaseDriver):
    """Selected by ``driver: pravega`` or by OMB's Pravega ``driverClass``."""

    display_name = "Pravega"
    url_schemes = ("pravega", "tcp", "tls")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver",)
    client_distributions = ("pravega",)
    config_model = "loadgen_drivers.pravega.config:PravegaConfig"
    local_broker = LocalStarter("loadgen_drivers.pravega.local.launch:start_local_pravega", 9090)
    upstream_local_broker = LocalStarter(
        "loadgen_drivers.pravega.local.upstream:start_upstream_pravega", 29090
    )

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The URL is the controller URI; ``pravega://`` names a plain one (``tcp://``), which
        says which broker it is where ``tcp://`` alone would not."""
        require_address(url)
        scheme, _, rest = url.partition("://")
        uri = f"tcp://{rest}" if scheme == "pravega" else url
        return {**config, "client": {**config.get("client", {}), "controllerURI": uri}}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        from loadgen_drivers.pravega.driver import PravegaDriver  # imports pravega

        return PravegaDriver


__all__ = ["Driver"]
