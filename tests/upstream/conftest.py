"""The upstream servers need Java and their jars: where either is missing, each test here is
skipped with what to install (failed under ``LOADGEN_REQUIRE_BROKERS=1``)."""

import pytest

from loadgen.base.errors import LoadgenError
from loadgen.driver_api.local.java import java_binary
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.kafka.local.distribution import kafka_distribution


@pytest.fixture(scope="session", autouse=True)
def kafka_can_start() -> None:
    try:
        java_binary("kafka")
        kafka_distribution()
    except LoadgenError as missing:
        unavailable(f"Apache Kafka cannot start here: {missing}")
