"""librdkafka's trust settings as a Python TLS context, to say why a handshake failed.

librdkafka reports an untrusted CA and an expired certificate with the same text ("certificate
verify failed"); a handshake made with Python's ``ssl`` and the same CA names which it was.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path

from loadgen.driver_api import client_context


def trust_context(conf: Mapping[str, str]) -> ssl.SSLContext | None:
    """The CA (a file or a folder) and host-name check librdkafka's ``conf`` asks for; ``None``
    without TLS, for ``probe`` (the system's stores, librdkafka's way), or when Python cannot
    read the CA: the check is only there to name a failure, never to add one."""
    protocol = conf.get("security.protocol", "plaintext").lower()
    if protocol not in ("ssl", "sasl_ssl"):
        return None
    if conf.get("enable.ssl.certificate.verification", "true").lower() == "false":
        return None
    location, pem = conf.get("ssl.ca.location"), conf.get("ssl.ca.pem")
    if location == "probe":
        return None
    folder = location is not None and Path(location).is_dir()  # librdkafka takes either
    try:
        context = client_context(
            cafile=None if folder else location, capath=location if folder else None, cadata=pem
        )
    except (OSError, ValueError):  # ssl.SSLError too: librdkafka's own message then stands
        return None
    context.check_hostname = conf.get("ssl.endpoint.identification.algorithm", "https") != "none"
    return context
