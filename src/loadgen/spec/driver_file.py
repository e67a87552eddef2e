"""Driver YAML: ``name`` plus the driver choice (our ``driver:`` or OMB's ``driverClass``).

Everything else in the file is the driver's own section, validated by the driver itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from loadgen.errors import ConfigError
from loadgen.spec.driver_spec import DriverSpec
from loadgen.spec.loader import load_yaml

OMB_DRIVER_CLASSES = {
    "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver": "kafka",
    "io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver": "pulsar",
    "io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver": "rabbitmq",
    "io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver": "pravega",
}


def spec_from_dict(
    data: Mapping[str, Any], *, source: str | None, lenient: bool = False
) -> DriverSpec:
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            "required field is missing or empty",
            file=source,
            path="name",
            value=name,
            allowed="a non-empty string such as 'Kafka'",
        )
    ours = data.get("driver")
    omb_class = data.get("driverClass")
    if omb_class is not None and omb_class not in OMB_DRIVER_CLASSES:
        raise ConfigError(
            "unknown OMB driver class",
            file=source,
            path="driverClass",
            value=omb_class,
            allowed=sorted(OMB_DRIVER_CLASSES),
        )
    mapped = OMB_DRIVER_CLASSES.get(omb_class) if omb_class else None
    if ours is None and mapped is None:
        raise ConfigError(
            "the file does not say which driver to use",
            file=source,
            path="driver",
            allowed=["driver: kafka|memory|...", "driverClass: <OMB class>"],
        )
    if ours is not None and not isinstance(ours, str):
        raise ConfigError("expected a driver name", file=source, path="driver", value=ours)
    if ours is not None and mapped is not None and ours != mapped:
        raise ConfigError(
            f"driver {ours!r} disagrees with driverClass (which means {mapped!r})",
            file=source,
            path="driver",
            value=ours,
            allowed=[mapped],
        )
    config = {
        key: value for key, value in data.items() if key not in ("name", "driver", "driverClass")
    }
    return DriverSpec(name=name, kind=ours or mapped, config=config, source=source, lenient=lenient)


def load_driver_spec(path: str | Path, *, lenient: bool = False) -> DriverSpec:
    return spec_from_dict(load_yaml(path), source=str(path), lenient=lenient)


def is_driver_file(data: Mapping[str, Any]) -> bool:
    return "driver" in data or "driverClass" in data
