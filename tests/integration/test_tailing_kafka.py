"""The foundation's acceptance run: OMB's lifecycle against a real (tansu) Kafka broker."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.engine.stats import measured_intervals, sent_per_second
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def one_minute_run(kafka_spec, tailing, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    return run_one(
        RunRequest(tailing(10_000), kafka_spec, RunOptions(stats_interval_s=10), out_dir=out)
    )


@pytest.mark.long
def test_one_minute_at_10k_hits_the_rate_within_one_percent(one_minute_run):
    rate = sent_per_second(measured_intervals(one_minute_run.outcome.intervals))
    assert rate == pytest.approx(10_000, rel=0.01)
    assert len(one_minute_run.result["publishRate"]) == 6


@pytest.mark.long
def test_one_minute_at_10k_receives_every_message_sent(one_minute_run):
    result = one_minute_run.result
    assert result["totalPublishErrors"] == 0
    assert result["totalMessagesSent"] > 600_000
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert result["aggregatedEndToEndLatency50pct"] > 0
    assert result["aggregatedPublishLatency99pct"] > 0


@pytest.mark.long
def test_result_is_readable_by_omb_create_charts(one_minute_run, tmp_path):
    """Runs OMB's create_charts.py when OMB_CREATE_CHARTS points at it (pygal needed)."""
    script = Path(__import__("os").environ.get("OMB_CREATE_CHARTS", "/nonexistent"))
    if not script.exists():
        pytest.skip("set OMB_CREATE_CHARTS to OMB's bin/create_charts.py to run this check")
    done = subprocess.run(
        [sys.executable, str(script), str(one_minute_run.path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    charts = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert len(charts) == 10, charts
    assert json.loads(one_minute_run.path.read_text())["driver"] == "Kafka"


def topics_on(broker):
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": broker.address}).list_topics(timeout=10).topics)


@pytest.mark.parametrize("keep", [False, True])
def test_topics_are_deleted_after_the_run_unless_kept(
    kafka_spec, kafka_broker, tailing, tmp_path, keep
):
    report = run_one(
        RunRequest(
            tailing(500, partitions=2),
            kafka_spec,
            RunOptions(duration_s=1, warmup_s=0, stats_interval_s=1, keep_topics=keep),
            out_dir=tmp_path,
        )
    )
    created = set(report.outcome.topics)
    assert len(created) == 1
    assert (created <= topics_on(kafka_broker)) is keep
