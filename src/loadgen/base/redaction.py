"""Secrets out of everything loadgen writes or prints: results, hook records, error messages.

A value is secret by the name of the field that holds it (a dotted path such as
``client.authentication.data``, or a ``key=value`` line of a properties text such as Kafka's
``sasl.password=...``), or as the user-info part of a URI (``amqp://user:pw@host``). Names
with a generic marker (:data:`SECRET_MARKERS`) are secret for every broker; a driver declares
the names of its own client's secrets (:attr:`loadgen.driver_api.BaseDriver.secret_fields`),
which are added here as its class is loaded (:func:`declare_secrets`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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
    lines = []
    for line in text.splitlines() or [text]:
        # a .properties line separates at its first '=' or ':' (``sasl.password: x``)
        cuts = [i for i in (line.find("="), line.find(":")) if i > 0]
        cut = min(cuts) if cuts else -1
        if cut > 0 and looks_secret(line[:cut]):
            line = f"{line[:cut]}{line[cut]}<redacted>"
        lines.append(_strip_userinfo(line))
    return "\n".join(lines)


def _strip_userinfo(text: str) -> str:
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{scheme}://<redacted>@{rest.split('@', 1)[1]}"
    return text
