"""The life cycle of a run on the three log-shaped systems, each on its real server (the
plugin's ``nats_broker``, ``redis_broker`` and ``rabbitmq_streams_broker``), through the same
runner as ``loadgen run``: tailing with exact counts and end-to-end latency, partitions by key
and round-robin with short payloads (the stamp's other carrier), a catch-up drained exactly, a
backlog left unread rather than lost, producer-only and consumer-only runs, two worker
processes, and nothing of a run's topic left on the server after it.

Each system's own behaviour (NATS's dedup and held pulls, Redis's trimming and frames, RabbitMQ
Streams' offsets, sub-entries and super streams) is in its own module.
"""

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from harness.rates import skip_if_host_busy
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import LocalBroker
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute, run_one
from loadgen.spec import Workload

pytestmark = pytest.mark.integration

GIB = 1024**3
SHORT = RunOptions(duration_s=3, warmup_s=0.5, stats_interval_s=1)


def workload(**fields) -> Workload:
    """One topic of 4 partitions, 512-byte messages at 2,000 msg/s for 3 s, one subscription."""
    base = {
        "name": "log systems", "topics": 1, "partitionsPerTopic": 4, "messageSize": 512,
        "subscriptionsPerTopic": 1, "producersPerTopic": 1, "consumerPerSubscription": 1,
        "producerRate": 2_000, "testDurationMinutes": 3 / 60, "warmupDurationMinutes": 0,
    }  # fmt: skip
    return Workload.model_validate(base | fields)


def assert_exact(result, subscriptions=1):
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == subscriptions * result["totalMessagesSent"]
    assert (result["totalLost"], result["totalDuplicates"]) == (0, 0)
    assert result["totalPublishErrors"] == 0


def nats_streams(broker: LocalBroker, topic: str) -> list[str]:
    import nats

    from loadgen_drivers.nats.naming import stream_name

    async def names():
        client = await nats.connect(f"nats://{broker.address}")
        try:
            return [info.config.name for info in await client.jetstream().streams_info()]
        finally:
            await client.close()

    return [name for name in asyncio.run(names()) if name == stream_name(topic)]


def redis_keys(broker: LocalBroker, topic: str) -> list[str]:
    import redis

    host, port = broker.address.rsplit(":", 1)
    with redis.Redis(host, int(port)) as client:
        return sorted(key.decode() for key in client.scan_iter(match=f"{topic}*"))


def rabbitmq_streams(broker: LocalBroker, topic: str) -> list[str]:
    from loadgen.driver_api.local.rabbitmq_node import rabbitmqctl

    listed = json.loads(rabbitmqctl(broker, "list_queues", "name", "type", "--formatter", "json"))
    return [q["name"] for q in listed if q["type"] == "stream" and q["name"].startswith(topic)]


@dataclass(frozen=True)
class System:
    kind: str
    display_name: str
    client: str
    """The distribution a result's ``clientVersions`` names."""
    left_of: Callable[[LocalBroker, str], list[str]]
    """What the server still holds of a topic: its streams or keys."""
    slow_reader: dict = field(default_factory=dict)
    """Driver-file changes for a consumer slowed by ``consumerDelay``: NATS pulls in batches
    of 20, so a batch is read well within the stream's ack wait."""


SYSTEMS = {
    "nats": System("nats", "NATS JetStream", "nats-py", nats_streams, {"pullBatch": 20}),
    "redis": System("redis", "Redis Streams", "redis", redis_keys),
    "rabbitmq-streams": System("rabbitmq-streams", "RabbitMQ Streams", "rstream", rabbitmq_streams),
}


@dataclass(frozen=True)
class OnServer:
    system: System
    broker: LocalBroker
    spec: DriverSpec

    def left_of(self, topic: str) -> list[str]:
        return self.system.left_of(self.broker, topic)


@pytest.fixture(params=list(SYSTEMS))
def on(request) -> OnServer:
    system = SYSTEMS[request.param]
    broker = request.getfixturevalue(f"{system.kind.replace('-', '_')}_broker")
    source = f"the local {system.display_name}"
    return OnServer(
        system, broker, DriverSpec(system.display_name, system.kind, broker.driver_config, source)
    )


def test_a_tailing_run_receives_every_message_with_its_latencies(on, tmp_path):
    report = run_one(RunRequest(workload(), on.spec, SHORT, out_dir=tmp_path))
    result = report.result
    assert result["driver"] == on.system.display_name
    assert_exact(result)
    assert 0 < result["aggregatedEndToEndLatency50pct"] <= result["aggregatedEndToEndLatencyMax"]
    assert 0 < result["aggregatedPublishLatency50pct"] <= result["aggregatedPublishLatency99pct"]
    assert result["run"]["clientVersions"][on.system.client]
    assert on.left_of(report.outcome.topics[0]) == []


@pytest.mark.parametrize("key_distributor", ["RANDOM_NANO", "NO_KEY"])
def test_keys_and_no_keys_spread_over_partitions_exactly(on, key_distributor, tmp_path):
    """16-byte payloads: too short for the stamp's payload prefix, so each driver's other
    carrier (a header, an entry field, a prefix of its own) takes it."""
    chosen = workload(
        partitionsPerTopic=6, keyDistributor=key_distributor, messageSize=16,
        subscriptionsPerTopic=2,
    )  # fmt: skip
    result = run_one(RunRequest(chosen, on.spec, SHORT, out_dir=tmp_path)).result
    assert_exact(result, subscriptions=2)
    assert result["totalOutOfOrder"] == 0  # one producer, one reader: each partition in order


def test_a_catch_up_run_drains_its_backlog_exactly(on, tmp_path):
    """Paused consumers take nothing in while a backlog of 8,000 messages builds; resumed,
    they read it all, and a tailing subscription beside them keeps up throughout."""
    chosen = workload(
        messageSize=1024, subscriptionsPerTopic=2, tailingSubscriptionsPerTopic=1,
        producerRate=4_000, consumerBacklogSizeGB=8_000 * 1024 / GIB,
    )  # fmt: skip
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=60)
    result = run_one(RunRequest(chosen, on.spec, options, out_dir=tmp_path)).result
    block = result["catchUp"]
    if not block["drained"]:
        skip_if_host_busy(result, "the drain")
    assert block["targetReached"] and block["drained"], block
    build = block["phases"]["build"]
    assert build["catchUpReadRate"] < 0.01 * build["publishRate"]  # paused: nothing delivered
    assert block["drainRate"] > block["phases"]["drain"]["publishRate"]
    assert_exact(result, subscriptions=2)


def test_a_backlog_left_at_the_end_is_unread_not_lost(on, tmp_path):
    """A consumer slowed to 500 msg/s of 2,000: what it has not read when the drain gives up
    is what the server says the subscription has yet to read, unread, and nothing is lost.
    What it reads while being paused for the question is received late (in the accounting,
    not the intervals), so the unread count may be below what the intervals miss, never
    above."""
    slow = workload(
        partitionsPerTopic=2, messageSize=256, consumerDelay="2ms",
        consumerBacklogSizeGB=1_000 * 256 / GIB, testDurationMinutes=2 / 60,
    )  # fmt: skip
    spec = DriverSpec(on.spec.name, on.spec.kind, {**on.spec.config, **on.system.slow_reader},
                      on.spec.source)  # fmt: skip
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=1, drain_timeout_s=1)
    result = run_one(RunRequest(slow, spec, options, out_dir=tmp_path)).result
    assert result["catchUp"]["drained"] is False
    missing = result["totalMessagesSent"] - result["totalMessagesReceived"]
    assert 1_000 < result["totalUnread"] <= missing
    assert result["totalLost"] == 0, result["deliveryAccounting"]
    [row] = result["deliveryAccounting"]
    assert row["unread"] == result["totalUnread"] and row["lost"] == 0


def test_a_producer_only_run_sends_and_leaves_nothing(on, tmp_path):
    report = run_one(RunRequest(workload(subscriptionsPerTopic=0), on.spec, SHORT,
                                out_dir=tmp_path))  # fmt: skip
    result = report.result
    assert result["totalMessagesSent"] > 0.9 * 2_000 * 3
    assert result["totalMessagesReceived"] == 0 and result["totalPublishErrors"] == 0
    assert result["aggregatedPublishLatency99pct"] > 0
    assert on.left_of(report.outcome.topics[0]) == []


def test_a_consumer_only_run_reads_a_topic_another_run_fills(on, tmp_path):
    """Two runs on one named topic (kept by both): one only produces, the other only reads."""
    topic = f"lg-consumer-only-{tmp_path.name[-8:]}"
    filling = workload(name="filler", subscriptionsPerTopic=0, testDurationMinutes=6 / 60)
    reading = workload(name="reader", producersPerTopic=0, testDurationMinutes=3 / 60)
    named = RunOptions(stats_interval_s=1, topic_names=(topic,))
    filler = threading.Thread(
        target=run_one, args=(RunRequest(filling, on.spec, named, out_dir=tmp_path),)
    )
    filler.start()
    try:
        result = run_one(RunRequest(reading, on.spec, named, out_dir=tmp_path)).result
    finally:
        filler.join(timeout=60)
    assert result["totalMessagesSent"] == 0
    assert result["totalMessagesReceived"] > 2_000  # 3 s of a 2k msg/s producer, give or take
    assert result["aggregatedEndToEndLatency50pct"] > 0


def test_two_worker_processes_share_the_topic_and_leave_nothing_behind(on):
    options = RunOptions(duration_s=3, warmup_s=0, stats_interval_s=1, drain_timeout_s=30)
    _, result, outcome = execute(
        RunRequest(workload(), on.spec, options, placement=Placement(processes=2))
    )
    assert not outcome.incomplete, outcome.stop_detail
    assert list(result["run"]["workerRoles"].values()) == ["producer", "consumer"]
    assert_exact(result)
    assert result["totalMessagesSent"] > 3_000
    assert on.left_of(outcome.topics[0]) == []
