"""The Pravega driver end to end: against the cluster ``PRAVEGA_CONTROLLER=tcp://host:port``
names (e.g. a ``pravega/pravega standalone`` container elsewhere), else against loadgen's local
Pravega. Each run uses a scope of its own, which the driver creates and, at the end, deletes
with everything in it.
"""

import os
import secrets

import pytest

import loadgen
from loadgen_drivers.pravega.client import open_manager

pytestmark = pytest.mark.integration


@pytest.fixture
def controller(request):
    return os.environ.get("PRAVEGA_CONTROLLER") or request.getfixturevalue("pravega_broker").address


def workload(key_distributor, rate=500):
    return loadgen.workload(
        name="pravega live",
        topics=1,
        partitionsPerTopic=4,
        messageSize=512,
        useRandomizedPayloads=True,
        randomBytesRatio=0.5,
        randomizedPayloadPoolSize=100,
        keyDistributor=key_distributor,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=rate,
        testDurationMinutes=1,
        warmupDurationMinutes=0,
    )


@pytest.mark.parametrize(
    ("key_distributor", "transactions", "rate", "least_sent"),
    [
        ("RANDOM_NANO", {}, 500, 1200),
        ("NO_KEY", {}, 500, 1200),
        # Each commit waits for the server: 3-6 ms on the local Pravega, 30-85 ms on Pravega
        # 0.13's standalone (--loadgen-upstream), where one producer sends 250-300 msg/s in
        # transactions of 10 and 21-42 in transactions of 1: the least counts are the real
        # server's, less a margin.
        ("RANDOM_NANO", {"enableTransaction": True, "eventsPerTransaction": 10}, 500, 600),
        ("RANDOM_NANO", {"enableTransaction": True, "eventsPerTransaction": 1}, 200, 50),
    ],
    ids=["random-nano", "no-key", "transactions-of-10", "transactions-of-1"],
)
def test_a_run_writes_reads_every_event_with_its_latency_and_leaves_nothing(
    controller, key_distributor, transactions, rate, least_sent
):
    scope = f"loadgen-test-{secrets.token_hex(4)}"
    driver = loadgen.driver(
        "pravega", client={"controllerURI": controller, "scopeName": scope}, **transactions
    )
    result = loadgen.run(workload(key_distributor, rate), driver, duration="3s", warmup=0)
    assert result.sent >= least_sent
    assert result.received == result.sent
    assert result.missing == 0
    assert result.e2e.count > 0
    assert 0 < result.e2e.p50_ms <= result.e2e.p99_ms < 5000
    assert result.publish.count > 0
    assert scope not in open_manager(controller).list_scope()
