"""A half-minute tailing run on the real RabbitMQ server, through the same runner as the CLI.

Half a minute, not OMB's one: holding the rate within 1 % and receiving every message mean
the same over three 10-s periods as over six (Kafka's run stays OMB's one-minute acceptance run).
"""

import json

import pytest

from harness.rates import judge_rate, skip_if_host_busy
from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen_drivers.rabbitmq.local.server import rabbitmqctl

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def half_minute_run(rabbitmq_spec, tailing, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run_one(
        RunRequest(
            tailing(5_000, minutes=0.5), rabbitmq_spec, RunOptions(stats_interval_s=10), out_dir=out
        )
    )


@pytest.mark.long
def test_half_a_minute_at_5k_holds_the_rate(half_minute_run):
    rate = sent_per_second(measured_intervals(half_minute_run.outcome.intervals))
    judge_rate(half_minute_run.result, rate, 5_000, rel=0.01)


@pytest.mark.long
def test_half_a_minute_at_5k_receives_every_message_sent(half_minute_run):
    result = half_minute_run.result
    assert result["driver"] == "RabbitMQ"
    assert result["totalPublishErrors"] == 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert 0 < result["aggregatedEndToEndLatency50pct"] < result["aggregatedEndToEndLatencyMax"]
    assert result["aggregatedPublishLatency99pct"] > 0
    if result["totalMessagesSent"] <= 150_000:  # half a minute at 5k, and the warm-up
        skip_if_host_busy(result, f"{result['totalMessagesSent']:,} sent")
    assert result["totalMessagesSent"] > 150_000


@pytest.mark.long
def test_the_run_leaves_no_exchange_or_queue_behind(half_minute_run, rabbitmq_broker):
    topic = half_minute_run.outcome.topics[0]
    queues = json.loads(rabbitmqctl(rabbitmq_broker, "list_queues", "name", "--formatter", "json"))
    exchanges = json.loads(
        rabbitmqctl(rabbitmq_broker, "list_exchanges", "name", "--formatter", "json")
    )
    assert not [q for q in queues if q["name"].startswith(topic)]
    assert topic not in {e["name"] for e in exchanges}
