"""One real tansu broker on a free loopback port for the whole integration session."""

import pytest

from loadgen.spec.driver_spec import DriverSpec
from loadgen.testing.tansu import start_tansu


@pytest.fixture(scope="session")
def tansu(tmp_path_factory):
    broker = start_tansu(log_dir=tmp_path_factory.mktemp("tansu"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_spec(tansu):
    return DriverSpec(name="Kafka", kind="kafka", config=tansu.driver_config(), source="tansu")
