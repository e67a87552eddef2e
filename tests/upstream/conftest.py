"""The upstream servers need Java and their jars: where either is missing, each test here is
skipped with what to install (failed under ``LOADGEN_REQUIRE_BROKERS=1``)."""

from collections.abc import Callable

import pytest

from loadgen.base.errors import LoadgenError
from loadgen.driver_api.local.java import ServerJars, java_binary
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.kafka.local.distribution import kafka_distribution
from loadgen_drivers.pravega.local.distribution import pravega_distribution
from loadgen_drivers.pulsar.local.distribution import pulsar_distribution


def can_start(kind: str, server: str, distribution: Callable[[], ServerJars]) -> None:
    try:
        java_binary(kind)
        distribution()
    except LoadgenError as missing:
        unavailable(f"{server} cannot start here: {missing}")


@pytest.fixture(scope="session", autouse=True)
def kafka_can_start() -> None:
    can_start("kafka", "Apache Kafka", kafka_distribution)


@pytest.fixture(scope="session")
def pulsar_can_start() -> None:
    """Requested by the Pulsar modules only: Kafka's jars say nothing about Pulsar's."""
    can_start("pulsar", "Apache Pulsar", pulsar_distribution)


@pytest.fixture(scope="session")
def pravega_can_start() -> None:
    """Requested by the Pravega modules only."""
    can_start("pravega", "Pravega", pravega_distribution)
