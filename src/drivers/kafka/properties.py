"""OMB's Java client properties, read and translated for librdkafka.

OMB's Kafka driver file carries Java ``.properties`` text (or, in ours, a YAML mapping). Most Java
client keys mean the same in librdkafka; the others are handled here, explicitly:

=============================  ===============================================================
Java client key                 librdkafka
=============================  ===============================================================
key/value (de)serializers       dropped silently: OMB forces byte/string (de)serializers
``buffer.memory`` (bytes)       ``queue.buffering.max.kbytes`` (bytes / 1024, rounded up)
``max.request.size``            ``message.max.bytes``
``fetch.max.wait.ms``           ``fetch.wait.max.ms``
``send.buffer.bytes``           ``socket.send.buffer.bytes`` (Java's -1 "OS default" becomes 0)
``receive.buffer.bytes``        ``socket.receive.buffer.bytes`` (likewise)
``sasl.jaas.config``            ``sasl.username`` + ``sasl.password`` for the PLAIN and SCRAM
                                login modules; any other module is left for librdkafka to reject
``request.timeout.ms``          kept, but capped at librdkafka's maximum (900000), with a warning
``default.api.timeout.ms``,     dropped with one warning each: no librdkafka equivalent
``max.block.ms``, ...           (the full list is :data:`NO_EQUIVALENT`)
everything else                 passed to librdkafka unchanged; a key or value it rejects is a
                                ConfigError naming the file and the key's path
=============================  ===============================================================

Security keys without an equivalent (Java trust stores, login callback classes) are not in the
dropped list on purpose: silently dropping them would turn a config error into an auth failure.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loadgen.errors import ConfigError

log = logging.getLogger("loadgen.kafka")

FORCED_BY_OMB = frozenset(
    {"key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
)
NO_EQUIVALENT = frozenset(
    {
        "default.api.timeout.ms",
        "max.block.ms",
        "metadata.max.idle.ms",
        "interceptor.classes",
        "partitioner.class",
        "exclude.internal.topics",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.sample.window.ms",
        "metrics.recording.level",
        "auto.include.jmx.reporter",
        "internal.leave.group.on.close",
        "socket.connection.setup.timeout.max.ms",
    }
)
RENAMED = {
    "max.request.size": "message.max.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
}
REQUEST_TIMEOUT_MAX_MS = 900_000
JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule")


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` lines: ``k=v``, ``k: v`` or ``k v``; ``#``/``!`` comments, blank lines.

    Unlike Java, a line with no value separator is an error (it is nearly always a typo), and
    backslash escapes and continuation lines are not interpreted.
    """
    properties = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]?\s*(.*)", line)
        if match is None or match.group(1) == line:
            raise ValueError(f"line {number} is not 'key=value': {line!r}")
        properties[match.group(1)] = match.group(2).strip()
    return properties


def properties_from(value: Any) -> dict[str, str]:
    """A ``*Config`` field's value (``.properties`` text or a YAML mapping) as strings."""
    if value is None:
        return {}
    if isinstance(value, str):
        return parse_properties(value)
    if isinstance(value, Mapping):
        return {str(key): _scalar_text(key, item) for key, item in value.items()}
    raise ValueError("expected .properties text or a mapping of keys to values")


def _scalar_text(key: Any, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ValueError(f"{key}: expected a single value, got {type(value).__name__}")


@dataclass(frozen=True)
class ClientConf:
    """librdkafka settings for one client, and where each came from in the file (for errors)."""

    settings: dict[str, str]
    origins: dict[str, str]
    """librdkafka key -> the dotted path the user wrote, e.g. ``producerConfig.max.request.size``."""

    def __or__(self, later: ClientConf) -> ClientConf:
        """Merge like OMB: keys of ``later`` (producer/consumer) override common ones."""
        return ClientConf(
            {**self.settings, **later.settings}, {**self.origins, **later.origins}
        )


@functools.cache
def warn_once(source: str | None, path: str, reason: str) -> None:
    """One warning per file and key, however many clients or workers read the file."""
    log.warning("%s: %s %s", source or "<driver config>", path, reason)


def to_librdkafka(section: str, properties: Mapping[str, str], source: str | None) -> ClientConf:
    """Translate one ``*Config`` block of Java client keys (see the module docstring)."""
    settings: dict[str, str] = {}
    origins: dict[str, str] = {}
    for key, value in properties.items():
        path = f"{section}.{key}"
        if key in FORCED_BY_OMB:
            continue
        if key in NO_EQUIVALENT:
            warn_once(source, path, "has no librdkafka equivalent; ignored")
            continue
        for new_key, new_value in _translate(key, value, path, source):
            settings[new_key] = new_value
            origins[new_key] = path
    return ClientConf(settings, origins)


def _translate(key: str, value: str, path: str, source: str | None) -> list[tuple[str, str]]:
    if key == "buffer.memory":
        kbytes = math.ceil(_integer(value, path, source) / 1024)
        return [("queue.buffering.max.kbytes", str(max(kbytes, 1)))]
    if key in ("send.buffer.bytes", "receive.buffer.bytes"):
        size = _integer(value, path, source)
        return [(RENAMED[key], "0" if size == -1 else str(size))]
    if key in RENAMED:
        return [(RENAMED[key], value)]
    if key == "request.timeout.ms" and value.isdigit() and int(value) > REQUEST_TIMEOUT_MAX_MS:
        warn_once(source, path, f"={value} is above librdkafka's maximum; using 900000")
        return [(key, str(REQUEST_TIMEOUT_MAX_MS))]
    if key == "sasl.jaas.config":
        return _jaas_credentials(value) or [(key, value)]
    return [(key, value)]


def _integer(value: str, path: str, source: str | None) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigError(
            f"expected an integer, got {value!r}",
            file=source,
            path=path,
            value=value,
            allowed="an integer",
        ) from None


def _jaas_credentials(value: str) -> list[tuple[str, str]]:
    """``username``/``password`` of a PLAIN or SCRAM JAAS line; empty for any other module."""
    if not any(module in value for module in JAAS_MODULES):
        return []
    options = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', value))
    if "username" not in options or "password" not in options:
        return []
    return [("sasl.username", options["username"]), ("sasl.password", options["password"])]


def is_secret(key: str) -> bool:
    """Keys whose values never go into an error message or a log line."""
    return any(word in key for word in ("password", "secret", "jaas", "token"))
