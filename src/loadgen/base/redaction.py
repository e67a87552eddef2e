"""Secrets out of everything loadgen writes or prints: results, hook records, error messages.

A value is secret by the name of the field that holds it (a dotted path such as
``client.authentication.data``, or a ``key=value`` line of a properties text such as Kafka's
``sasl.password=...``, over all its continuation lines), or as the user-info part of a URI
(``amqp://user:pw@host``, every URI in a text). Names with a generic marker
(:data:`SECRET_MARKERS`) are secret for every broker; a driver declares the names of its own
client's secrets (:attr:`loadgen.driver_api.BaseDriver.secret_fields`), which are added here as
its class is loaded (:func:`declare_secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from loadgen.base.properties import logical_lines

SECRET_MARKERS = ("password", "secret", "token", "credential", "private")
"""A field or property whose name contains one of these holds a secret, whatever the broker."""
_declared: set[str] = set()
"""Name parts the loaded drivers declared secret."""


def declare_secrets(names: Iterable[str]) -> None:
    """Treat every field or property whose name contains one of ``names`` as a secret."""
    _declared.update(name.lower() for name in names)


def redact(value: Any, path: str = "") -> Any:
    """Replace secret-looking values (by dotted key path, or URI userinfo) so results never
    hold them; ``path`` is where ``value`` sits, since some secrets hide under a plain key."""
    if isinstance(value, dict):
        return {key: redact_at(f"{path}.{key}", item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, path) for item in value]
    if isinstance(value, str):
        return _redact_text(value)
    return value


def redact_at(path: str, value: Any) -> Any:
    """``value`` as it may be shown, given the dotted ``path`` of the field that holds it."""
    if looks_secret(path):
        return "<redacted>"
    return redact(value, path)


def looks_secret(key: str) -> bool:
    """Whether a field or property name (or dotted path) names a secret."""
    lowered = key.lower()
    return any(marker in lowered for marker in (*SECRET_MARKERS, *_declared))


def _redact_text(text: str) -> str:
    shown = []
    hiding = False
    for line in logical_lines(text):
        cut = line.separator()
        if cut > 0 and looks_secret(line.text[:cut]):
            # the whole logical line goes, continuation lines included
            shown.append(f"{line.text[: cut + 1]}<redacted>")
            hiding = True
        elif hiding and cut < 0 and not line.is_blank:
            # text that is no property right after a secret one is the rest of it (a PEM body
            # pasted without continuations): hidden too
            continue
        else:
            hiding = False
            shown += [_strip_userinfo(natural) for natural in line.natural]
    return "\n".join(shown)


URI_AUTHORITY = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)"
    r"(?P<authority>(?:(?![A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s])*)"
)
"""A URI's scheme and its authority, which ends at the first ``/``, ``?``, ``#``, whitespace
or the next URI."""


def _strip_userinfo(text: str) -> str:
    """Every URI's user info replaced, cut where urllib and pika cut it: at the authority's
    last ``@`` (``amqp://u:p@ss@host`` is host ``host``, password ``p@ss``)."""

    def stripped(uri: re.Match[str]) -> str:
        _, at, host = uri["authority"].rpartition("@")
        return f"{uri['scheme']}<redacted>@{host}" if at else uri[0]

    return URI_AUTHORITY.sub(stripped, text)
