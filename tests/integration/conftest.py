"""Driver specs for the brokers of loadgen's pytest plugin, and the shared tailing workload.

The brokers themselves (``kafka_broker``, ``rabbitmq_broker``) come from the plugin
(``loadgen.pytest_plugin.fixtures``), the same fixtures a user's suite gets.
"""

from pathlib import Path

import pytest

from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import Workload, load_yaml, parse_model

CLASSIC_WORKLOAD = (
    Path(__file__).resolve().parents[2] / "configs/workloads/1-topic-16-partitions-1kb-10k.yaml"
)


@pytest.fixture(scope="session")
def kafka_spec(kafka_broker):
    source = kafka_broker.server or "tansu"
    return DriverSpec(name="Kafka", kind="kafka", config=kafka_broker.driver_config, source=source)


@pytest.fixture(scope="session")
def rabbitmq_spec(rabbitmq_broker):
    return DriverSpec(
        name="RabbitMQ",
        kind="rabbitmq",
        config=rabbitmq_broker.driver_config,
        source="local rabbitmq",
    )


def tailing_workload(rate: int, partitions: int = 16, minutes: float = 1) -> Workload:
    """OMB's 1-topic / 1 KiB workload (configs/workloads) at ``rate``, with a short warm-up."""
    fields = load_yaml(CLASSIC_WORKLOAD) | {
        "name": f"1 topic / {partitions} partitions / 1kb / {rate}",
        "partitionsPerTopic": partitions,
        "producerRate": rate,
        "testDurationMinutes": minutes,
        "warmupDurationMinutes": 0.1,
    }
    return parse_model(Workload, fields, file=str(CLASSIC_WORKLOAD))


@pytest.fixture(scope="session")
def tailing():
    """Makes the tailing workloads the integration runs share (see :func:`tailing_workload`)."""
    return tailing_workload
