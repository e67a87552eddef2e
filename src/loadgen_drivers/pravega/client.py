"""The one module that imports ``pravega_client``, and the client objects built from config.

A missing ``pravega`` package becomes :class:`~loadgen.base.errors.MissingExtra` with its install
command, wherever the driver is loaded. The client (0.3.8) has no retry, timeout or pooling
settings: everything it can be told is the controller URI and the TLS flag.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from loadgen.base.errors import MissingExtra
from loadgen_drivers.pravega.config import SCALE_FACTOR, Scaling

try:
    import pravega_client
except ImportError:
    raise MissingExtra("pravega", "pravega") from None

StreamManager = pravega_client.StreamManager


def open_manager(controller_uri: str) -> pravega_client.StreamManager:
    """A manager for ``controller_uri``; it connects lazily, so this never blocks."""
    tls = urlsplit(controller_uri).scheme == "tls"
    return pravega_client.StreamManager(controller_uri, False, tls)


def scaling_policy(scaling: Scaling) -> pravega_client.StreamScalingPolicy:
    policy = pravega_client.StreamScalingPolicy
    if scaling.kind == "events":
        return policy.auto_scaling_policy_by_event_rate(
            scaling.target_rate, SCALE_FACTOR, scaling.min_segments
        )
    if scaling.kind == "kbytes":
        return policy.auto_scaling_policy_by_data_rate(
            scaling.target_rate, SCALE_FACTOR, scaling.min_segments
        )
    return policy.fixed_scaling_policy(scaling.min_segments)
