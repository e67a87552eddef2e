"""A small catch-up run on every other real broker: pause, build, resume, drain, all received.

Kafka's larger catch-up and mixed runs are in test_scenarios_kafka.py; here each driver's
pause/resume goes through the whole scenario once (pulsar-lite with its fixture's settings,
see loadgen.testing.pulsar).
"""

import pytest

from loadgen.request import RunOptions, RunRequest
from loadgen.runner import run_one
from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec

pytestmark = pytest.mark.integration

GIB = 1024**3


@pytest.fixture(params=["rabbitmq", "pulsar"])
def broker_spec(request):
    if request.param == "rabbitmq":
        return request.getfixturevalue("rabbitmq_spec")
    broker = request.getfixturevalue("pulsar_broker")
    return DriverSpec("Pulsar", "pulsar", broker.driver_config, "pulsar-lite")


def test_a_catch_up_run_drains_its_backlog(broker_spec, tmp_path):
    chosen = Workload.model_validate(
        {
            "name": "small catch-up",
            "topics": 1,
            "partitionsPerTopic": 4,
            "messageSize": 1024,
            "subscriptionsPerTopic": 2,
            "tailingSubscriptionsPerTopic": 1,
            "producersPerTopic": 1,
            "consumerPerSubscription": 1,
            "producerRate": 4_000,
            "consumerBacklogSizeGB": 8_000 * 1024 / GIB,  # 8 000 messages: two seconds
            "testDurationMinutes": 3 / 60,
            "warmupDurationMinutes": 0,
        }
    )
    options = RunOptions(stats_interval_s=1, catch_up_timeout_s=60)
    report = run_one(RunRequest(chosen, broker_spec, options, out_dir=tmp_path))
    block = report.result["catchUp"]
    assert block["targetReached"] and block["drained"], block
    build = block["phases"]["build"]
    assert build["catchUpReadRate"] < 0.01 * build["publishRate"]  # paused
    assert build["tailingReadRate"] == pytest.approx(build["publishRate"], rel=0.15)
    assert block["drainRate"] > block["phases"]["drain"]["publishRate"]
    result = report.result
    assert result["totalMessagesReceived"] == 2 * result["totalMessagesSent"]
    # every message once per subscription, the backlog's too: the accounting agrees
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    assert isinstance(result["totalOutOfOrder"], int)
