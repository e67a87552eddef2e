"""Driver YAML: ``name`` plus the driver choice (our ``driver:`` or OMB's ``driverClass``).

Everything else in the file is the driver's own section, validated by the driver itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec.env import expand_env
from loadgen.spec.loader import load_yaml

SELECTORS = ("driver", "driverClass")


def spec_from_dict(
    data: Mapping[str, Any], *, source: str | None, lenient: bool = False
) -> DriverSpec:
    """A DriverSpec from a parsed driver file (or a dict built in Python); ``source`` names it.

    ``${NAME}`` / ``${NAME:-default}`` in its strings come from the environment (spec.env).
    """
    data = expand_env(data, file=source)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            "required field is missing or not a non-empty string",
            file=source,
            path="name",
            value=name,
            allowed="a non-empty string such as 'Kafka'",
        )
    kind = _driver_kind(data.get("driver"), data.get("driverClass"), source)
    config = {key: value for key, value in data.items() if key not in ("name", *SELECTORS)}
    return DriverSpec(name=name, kind=kind, config=config, source=source, lenient=lenient)


def omb_driver_classes() -> dict[str, str]:
    """OMB ``driverClass`` values mapped to the installed driver that declares them."""
    return {
        omb_class: kind
        for kind, driver in driver_classes().items()
        for omb_class in driver.omb_driver_classes
    }


def _driver_kind(ours: Any, omb_class: Any, source: str | None) -> str:
    """Our ``driver:`` name, or the one OMB's ``driverClass`` maps to; they must agree."""
    if ours is None and omb_class is None:
        raise ConfigError(
            "the file does not say which driver to use",
            file=source,
            path="driver",
            allowed=["driver: kafka|memory|...", "driverClass: <OMB driver class>"],
        )
    if ours is not None and (not isinstance(ours, str) or not ours):
        raise ConfigError(
            "expected a driver name", file=source, path="driver", value=ours, allowed="a string"
        )
    if omb_class is None:
        return ours
    known = omb_driver_classes()
    mapped = known.get(omb_class) if isinstance(omb_class, str) else None
    if mapped is None:
        raise ConfigError(
            "unknown OMB driver class",
            file=source,
            path="driverClass",
            value=omb_class,
            allowed=sorted(known),
        )
    if ours is not None and ours != mapped:
        raise ConfigError(
            f"driver {ours!r} disagrees with driverClass (which means {mapped!r})",
            file=source,
            path="driver",
            value=ours,
            allowed=[mapped],
        )
    return mapped


def load_driver_spec(path: str | Path, *, lenient: bool = False) -> DriverSpec:
    """The driver file at ``path``; the driver's own section is checked later, by the driver."""
    return spec_from_dict(load_yaml(path), source=str(path), lenient=lenient)


def is_driver_file(data: Mapping[str, Any]) -> bool:
    return any(key in data for key in SELECTORS)
