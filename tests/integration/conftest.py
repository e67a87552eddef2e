"""Real brokers on free loopback ports, one of each for the whole integration session.

A broker whose software is missing skips its tests (fails them under LOADGEN_REQUIRE_BROKERS=1).
"""

import pytest

from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec
from loadgen.testing.rabbitmq import INSTALL_HINT, rabbitmq_installed, start_rabbitmq
from loadgen.testing.require import unavailable
from loadgen.testing.tansu import start_tansu


@pytest.fixture(scope="session")
def tansu(tmp_path_factory):
    broker = start_tansu(log_dir=tmp_path_factory.mktemp("tansu"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_spec(tansu):
    return DriverSpec(name="Kafka", kind="kafka", config=tansu.driver_config, source="tansu")


@pytest.fixture(scope="session")
def rabbitmq():
    if not rabbitmq_installed():
        unavailable(f"rabbitmq-server is not installed ({INSTALL_HINT})")
    broker = start_rabbitmq()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def rabbitmq_spec(rabbitmq):
    return DriverSpec(
        name="RabbitMQ", kind="rabbitmq", config=rabbitmq.driver_config, source="local rabbitmq"
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
