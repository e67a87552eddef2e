"""Who may reach a loadgen port: loopback freely, anything else only with a token.

Shared by the worker API (:mod:`.server`) and the metrics endpoint (:mod:`loadgen.metrics`).
"""

from __future__ import annotations

import ipaddress

from loadgen.errors import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """A worker reachable from other hosts runs load for whoever can reach it: not without a
    token."""
    if not token and not is_loopback(host):
        raise ConfigError(
            f"binding {host} (not loopback) needs a token",
            path="--token",
            value=None,
            allowed="--token TOKEN or the LOADGEN_TOKEN environment variable",
        )
