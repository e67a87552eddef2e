"""TLS for ``amqps://`` URIs: RabbitMQ's URI query keys, or a driver file's ``tls`` block.

RabbitMQ's URI spec lets an ``amqps`` URI carry its TLS settings as query keys
(``?cacertfile=/ca.pem&certfile=...&keyfile=...&verify=verify_peer&server_name_indication=h``);
pika refuses unknown query keys, so these are taken out of the URI before pika sees it. The
driver file's ``tls`` block uses the same names and applies to every ``amqps`` URI; a URI's own
keys win. ``verify_none`` turns off certificate checks altogether;
``server_name_indication=disable`` keeps the CA check but not the hostname check; any other
value is the hostname the certificate must name (and is sent as SNI).
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import pika

NO_HOSTNAME_CHECK = "disable"


class TlsSettings(BaseModel):
    """A driver file's ``tls`` block (RabbitMQ's URI query names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cacertfile: str | None = None
    """CA bundle the server's certificate must chain to; the system's CAs when unset."""
    certfile: str | None = None
    """Client certificate (PEM) presented to the node; unset: none."""
    keyfile: str | None = None
    """The client certificate's private key (PEM); unset: read from ``certfile``."""
    verify: Literal["verify_peer", "verify_none"] = "verify_peer"
    """``verify_peer`` checks the server's certificate; ``verify_none`` turns off certificate
    checks altogether."""
    server_name_indication: str | None = None
    """The name the server's certificate must carry, also sent as SNI; ``disable`` keeps the CA
    check but not the name check; unset: the URI's host."""


TLS_KEYS = tuple(TlsSettings.model_fields)


def split_tls_query(uri: str) -> tuple[str, dict[str, str]]:
    """``uri`` without its TLS query keys, and those keys."""
    parts = urlsplit(uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    tls = {key: value for key, value in query if key in TLS_KEYS}
    rest = urlencode([(key, value) for key, value in query if key not in TLS_KEYS])
    return urlunsplit(parts._replace(query=rest)), tls


def settings_for(uri: str, base: TlsSettings) -> TlsSettings | None:
    """The TLS settings of ``uri`` (``None`` for ``amqp://``); raises ``ValueError``."""
    if urlsplit(uri).scheme != "amqps":
        return None
    _, query = split_tls_query(uri)
    return TlsSettings.model_validate(base.model_dump() | query)


def ssl_options(host: str, settings: TlsSettings) -> pika.SSLOptions:
    """A client context for ``host``; raises ``OSError``/``ssl.SSLError`` for unreadable files."""
    import pika  # here, not at the top: ``TlsSettings`` is read without the client (the docs)

    for name in ("cacertfile", "certfile", "keyfile"):
        path = getattr(settings, name)
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{name} {path}: no such file")
    context = ssl.create_default_context(cafile=settings.cacertfile)
    if settings.certfile:
        context.load_cert_chain(settings.certfile, settings.keyfile)
    sni = settings.server_name_indication
    if settings.verify == "verify_none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif sni == NO_HOSTNAME_CHECK:
        context.check_hostname = False
    name = host if sni in (None, NO_HOSTNAME_CHECK) else sni
    return pika.SSLOptions(context, server_hostname=name)
