"""Unread is not lost: a catch-up run whose backlog cannot drain in its time reports what the
broker still holds as unread, and nothing as lost (tansu and RabbitMQ, real brokers)."""

from dataclasses import replace

import pytest

from loadgen.request import RunOptions, RunRequest
from loadgen.runner import run_one
from loadgen.spec import Workload

pytestmark = pytest.mark.integration

GIB = 1024**3
RATE = 2_000


@pytest.fixture(params=["kafka", "rabbitmq"])
def broker_spec(request):
    spec = request.getfixturevalue(f"{request.param}_spec")
    if request.param == "rabbitmq":  # small deliveries: the backlog query shares their thread
        return replace(spec, config={**spec.config, "prefetch": 20})
    return spec


def test_a_backlog_left_at_the_end_is_unread_not_lost(broker_spec, tmp_path):
    slow = Workload.model_validate(
        {
            "name": "undrained catch-up",
            "topics": 1,
            "partitionsPerTopic": 2,
            "messageSize": 256,
            "subscriptionsPerTopic": 1,
            "producersPerTopic": 1,
            "consumerPerSubscription": 1,
            "producerRate": RATE,
            "consumerBacklogSizeGB": 1_000 * 256 / GIB,  # 1 000 messages: half a second
            "consumerDelay": "2ms",  # reads at most 500 msg/s of the 2 000 sent: never drains
            "testDurationMinutes": 2 / 60,
            "warmupDurationMinutes": 0,
        }
    )
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=1, drain_timeout_s=1)
    report = run_one(RunRequest(slow, broker_spec, options, out_dir=tmp_path))
    result = report.result
    assert result["catchUp"]["drained"] is False
    assert result["run"]["drain"]["undelivered"] > 0
    missing = result["totalMessagesSent"] - result["totalMessagesReceived"]
    assert result["totalUnread"] > 1_000 and result["catchUp"]["unreadMessages"] > 1_000
    assert result["totalLost"] == 0, result["deliveryAccounting"]
    [row] = result["deliveryAccounting"]
    assert row["unread"] == result["totalUnread"] <= missing
