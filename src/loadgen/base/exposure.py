"""Who may reach a loadgen port: loopback freely, anything else only with a token.

Shared by the worker API (:mod:`.server`) and the metrics endpoint (:mod:`loadgen.metrics`).
"""

from __future__ import annotations

import ipaddress

from loadgen.base.errors import ConfigError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(
    host: str, token: str | None, doing: str = "binding", option: str = "--token"
) -> None:
    """A worker (or its metrics) reachable from other hosts serves whoever can reach it: not
    without a token. ``doing`` and ``option`` say what needs it, for the message."""
    if not token and not is_loopback(host):
        raise ConfigError(
            f"{doing} {host} (not loopback) needs a token",
            path=option,
            value=host,
            allowed="a loopback address, or a token (--token or LOADGEN_TOKEN)",
        )
