"""Broker URLs to driver configs: what ``loadgen probe URL`` and ``loadgen run URL`` connect to.

The scheme picks the driver; a driver YAML (``-d``) may supply the client settings, with the
URL's address taking the place of the file's. ``kafka+ssl://`` sets ``security.protocol=SSL``
(a driver file's SASL_SSL is kept, with its SASL and store settings); ``amqps://`` takes its CA
from the URL's query or the file's ``tls`` block; ``pulsar+ssl://`` its trust settings from the
file's ``client``.

A plug-in driver adds schemes of its own with two class members: ``url_schemes`` (a tuple of
scheme names) and a ``config_from_url(url, config) -> dict`` classmethod that puts the URL into
its driver section (``config`` is the ``-d`` file's section, or empty).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loadgen.driver import ENTRY_POINT_GROUP
from loadgen.errors import ConfigError
from loadgen.spec import DriverSpec, load_driver_spec

SOURCE = "<url>"
KAFKA_DEFAULT_PORT = 9092
SECURITY_PROTOCOL_LINE = re.compile(r"^\s*security\.protocol\s*[=:]\s*(\S+)", re.MULTILINE)

Apply = Callable[[str, Mapping[str, Any]], dict[str, Any]]


def _kafka_servers(netloc: str) -> str:
    hosts = [host if ":" in host else f"{host}:{KAFKA_DEFAULT_PORT}" for host in netloc.split(",")]
    return ",".join(hosts)


def set_property(block: Any, key: str, value: str) -> Any:
    """Set ``key`` in a properties block that may be a mapping or ``.properties`` text."""
    if isinstance(block, Mapping):
        return {**block, key: value}
    text = block or ""
    return f"{text.rstrip()}\n{key}={value}\n".lstrip()


def _kafka(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    servers = _kafka_servers(urlsplit(url).netloc)
    return {
        **config,
        "commonConfig": set_property(config.get("commonConfig"), "bootstrap.servers", servers),
    }


def _kafka_ssl(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """``kafka+ssl://``: TLS, unless the driver file already asks for SASL over TLS."""
    merged = _kafka(url, config)
    common = merged["commonConfig"]
    if isinstance(common, Mapping):
        protocols = [str(common.get("security.protocol", ""))]
    else:  # .properties text: the last line for a key wins
        protocols = SECURITY_PROTOCOL_LINE.findall(common) or [""]
    if "SSL" not in protocols[-1].upper():
        merged["commonConfig"] = set_property(common, "security.protocol", "SSL")
    return merged


def _rabbitmq(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "amqpUris": [url]}


def _pulsar(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "client": {**config.get("client", {}), "serviceUrl": url}}


def _pravega(url: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return {**config, "client": {**config.get("client", {}), "controllerURI": url}}


SCHEMES: dict[str, tuple[str, str, Apply]] = {
    "kafka": ("kafka", "Kafka", _kafka),
    "kafka+ssl": ("kafka", "Kafka", _kafka_ssl),
    "amqp": ("rabbitmq", "RabbitMQ", _rabbitmq),
    "amqps": ("rabbitmq", "RabbitMQ", _rabbitmq),
    "pulsar": ("pulsar", "Pulsar", _pulsar),
    "pulsar+ssl": ("pulsar", "Pulsar", _pulsar),
    "tcp": ("pravega", "Pravega", _pravega),
    "tls": ("pravega", "Pravega", _pravega),
}
"""Built-in URL scheme → (driver, display name, how the URL goes into that driver's config)."""


def plugin_schemes() -> dict[str, tuple[str, str, Apply]]:
    """Schemes that installed drivers other than the built-in ones declare (``url_schemes``)."""
    built_in = {kind for kind, _, _ in SCHEMES.values()}
    found: dict[str, tuple[str, str, Apply]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in built_in:
            continue  # their schemes are above; loading them would import every client
        driver = ep.load()
        for scheme in getattr(driver, "url_schemes", ()):
            found[scheme] = (ep.name, ep.name.capitalize(), driver.config_from_url)
    return found


def driver_for_url(
    url: str,
    driver_file: Path | None = None,
    defaults: Mapping[str, Mapping[str, Any]] | None = None,
) -> DriverSpec:
    """The driver config for ``url``: ``driver_file`` supplies client settings, else the
    ``defaults`` for the URL's driver kind (none: the driver's own defaults)."""
    scheme = urlsplit(url).scheme
    known = SCHEMES if scheme in SCHEMES else plugin_schemes()
    if scheme not in known or (scheme in SCHEMES and not urlsplit(url).netloc):
        raise ConfigError(
            "not a broker URL",
            path="URL",
            value=url,
            allowed=[f"{name}://host:port" for name in {**SCHEMES, **known}],
        )
    kind, name, apply = known[scheme]
    base: Mapping[str, Any] = (defaults or {}).get(kind, {})
    source, display = SOURCE, name
    if driver_file is not None:
        loaded = load_driver_spec(driver_file)
        if loaded.kind != kind:
            raise ConfigError(
                f"{scheme}:// URLs need a {kind} driver file, not {loaded.kind}",
                file=str(driver_file),
                path="driver",
                value=loaded.kind,
                allowed=[kind],
            )
        base, source, display = {**base, **loaded.config}, loaded.source, loaded.name
    return DriverSpec(name=display, kind=kind, config=apply(url, base), source=source)
