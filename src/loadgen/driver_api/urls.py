"""Broker URLs to driver configs: what ``loadgen probe URL`` and ``loadgen run URL`` connect to.

The scheme picks the driver: the installed driver whose class lists it in ``url_schemes``
(:class:`loadgen.driver_api.BaseDriver`). A driver YAML (``-d``) may supply the client settings;
the driver's ``config_from_url`` puts the URL's address in the place of the file's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loadgen.base.errors import ConfigError
from loadgen.driver_api import BaseDriver, display_name, driver_classes
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.driver_spec import DriverSpec

SOURCE = "<url>"

Defaults = Callable[[type[BaseDriver]], Mapping[str, Any]]
"""The driver-file fields a driver starts from when no ``-d`` file is given."""


def driver_for_scheme(url: str) -> tuple[str, type[BaseDriver]]:
    """The registered name and class of the driver that answers ``url``'s scheme."""
    scheme = urlsplit(url).scheme
    drivers = driver_classes()
    for kind, driver in drivers.items():
        if scheme in driver.url_schemes:
            return kind, driver
    raise ConfigError(
        "not a broker URL",
        path="URL",
        value=url,
        allowed=[f"{known}://host:port" for d in drivers.values() for known in d.url_schemes],
    )


def driver_for_url(
    url: str, driver_file: Path | None = None, defaults: Defaults | None = None
) -> DriverSpec:
    """The driver config for ``url``: ``driver_file`` supplies client settings, over the
    ``defaults`` of the URL's driver (none: the driver's own defaults)."""
    kind, driver = driver_for_scheme(url)
    base: Mapping[str, Any] = defaults(driver) if defaults else {}
    source, name = SOURCE, display_name(kind, driver)
    if driver_file is not None:
        loaded = load_driver_spec(driver_file)
        if loaded.kind != kind:
            raise ConfigError(
                f"{urlsplit(url).scheme}:// URLs need a {kind} driver file, not {loaded.kind}",
                file=str(driver_file),
                path="driver",
                value=loaded.kind,
                allowed=[kind],
            )
        base, source, name = {**base, **loaded.config}, loaded.source, loaded.name
    return DriverSpec(name=name, kind=kind, config=driver.config_from_url(url, base), source=source)
