"""The local Pravega for its own conformance tests, one per session, driven by the real client."""

import pytest

from loadgen_drivers.pravega.local.launch import start_local_pravega


@pytest.fixture(scope="session")
def local_pravega():
    broker = start_local_pravega()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def controller_uri(local_pravega):
    return local_pravega.address
