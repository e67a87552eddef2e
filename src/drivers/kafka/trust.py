"""librdkafka's trust settings as a Python TLS context, to say why a handshake failed.

librdkafka reports an untrusted CA and an expired certificate with the same text ("certificate
verify failed"); a handshake made with Python's ``ssl`` and the same CA names which it was.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping


def trust_context(conf: Mapping[str, str]) -> ssl.SSLContext | None:
    """The CA and host-name check librdkafka's ``conf`` asks for; ``None`` without TLS or when
    the CA is the system's own store under another name (``probe`` is left to librdkafka)."""
    protocol = conf.get("security.protocol", "plaintext").lower()
    if protocol not in ("ssl", "sasl_ssl"):
        return None
    if conf.get("enable.ssl.certificate.verification", "true").lower() == "false":
        return None
    location, pem = conf.get("ssl.ca.location"), conf.get("ssl.ca.pem")
    if location == "probe":
        return None
    context = ssl.create_default_context(cafile=location, cadata=pem)
    context.check_hostname = conf.get("ssl.endpoint.identification.algorithm", "https") != "none"
    return context
