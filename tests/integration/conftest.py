"""Driver specs for the brokers of loadgen's pytest plugin, and the shared tailing workload.

The brokers themselves (``kafka_broker``, ``rabbitmq_broker``) come from the plugin
(``loadgen.testing.pytest_plugin``), the same fixtures a user's suite gets.
"""

import pytest

from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec


@pytest.fixture(scope="session")
def kafka_spec(kafka_broker):
    return DriverSpec(name="Kafka", kind="kafka", config=kafka_broker.driver_config, source="tansu")


@pytest.fixture(scope="session")
def rabbitmq_spec(rabbitmq_broker):
    return DriverSpec(
        name="RabbitMQ",
        kind="rabbitmq",
        config=rabbitmq_broker.driver_config,
        source="local rabbitmq",
    )


def tailing_workload(rate: int, partitions: int = 16, minutes: float = 1) -> Workload:
    """One topic, one producer, one subscription, 1 KiB half-random payloads."""
    return Workload.model_validate(
        {
            "name": f"1 topic / {partitions} partitions / 1kb / {rate}",
            "topics": 1,
            "partitionsPerTopic": partitions,
            "messageSize": 1024,
            "useRandomizedPayloads": True,
            "randomBytesRatio": 0.5,
            "randomizedPayloadPoolSize": 1000,
            "subscriptionsPerTopic": 1,
            "consumerPerSubscription": 1,
            "producersPerTopic": 1,
            "producerRate": rate,
            "testDurationMinutes": minutes,
            "warmupDurationMinutes": 0.1,
        }
    )


@pytest.fixture(scope="session")
def tailing():
    """Makes the tailing workloads the integration runs share (see :func:`tailing_workload`)."""
    return tailing_workload
