"""The tailing scenario end to end on the in-process broker: lifecycle, totals, partial results."""

import json
from pathlib import Path

import pytest

from harness.rates import judge_rate
from loadgen.base.errors import ConfigError, RunAborted
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import OnInterval
from loadgen.engine.local_worker import LocalWorker
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

MEMORY = DriverSpec(name="Memory", kind="memory")


def workload(**overrides):
    fields = {
        "name": "memory tailing",
        "topics": 1,
        "partitionsPerTopic": 4,
        "messageSize": 256,
        "useRandomizedPayloads": True,
        "randomBytesRatio": 0.5,
        "randomizedPayloadPoolSize": 10,
        "subscriptionsPerTopic": 2,
        "consumerPerSubscription": 1,
        "producersPerTopic": 2,
        "producerRate": 2000,
        "testDurationMinutes": 1,
        "warmupDurationMinutes": 0,
    }
    fields.update(overrides)
    return Workload.model_validate(fields)


def test_tailing_run_delivers_every_message_to_every_subscription(tmp_path):
    report = run_one(
        RunRequest(
            workload(),
            MEMORY,
            RunOptions(duration_s=2, warmup_s=1, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    result = report.result
    assert result["totalMessagesReceived"] == 2 * result["totalMessagesSent"]
    assert result["totalPublishErrors"] == 0
    # warm-up intervals are kept for the totals but not reported as periods
    assert [s.warmup for s in report.outcome.intervals] == [True, False, False]
    assert len(result["publishRate"]) == 2
    measured = [s for s in report.outcome.intervals if not s.warmup]
    rate = sum(s.sent for s in measured) / sum(s.seconds for s in measured)
    judge_rate(result, rate, 2000, rel=0.03)
    assert result["aggregatedEndToEndLatency99pct"] > 0
    assert json.loads(report.path.read_text())["workload"] == "memory tailing"
    assert report.path.name.startswith("memory-tailing-Memory-")


def test_achieved_publish_rate_is_within_one_percent_of_target(tmp_path):
    report = run_one(
        RunRequest(
            workload(producerRate=5000, subscriptionsPerTopic=1),
            MEMORY,
            RunOptions(duration_s=3, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    measured = sum(s.sent for s in report.outcome.intervals)
    seconds = sum(s.seconds for s in report.outcome.intervals)
    judge_rate(report.result, measured / seconds, 5000, rel=0.01)


def test_interrupt_during_measurement_writes_a_partial_result(tmp_path):
    seen = []

    def interrupt_on_second(stats, backlog):
        seen.append(stats)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(RunAborted) as aborted:
        options = RunOptions(duration_s=30, warmup_s=0, stats_interval_s=1)
        listeners = (OnInterval(interrupt_on_second),)
        run_one(RunRequest(workload(), MEMORY, options, out_dir=tmp_path, listeners=listeners))
    assert aborted.value.exit_code == 130
    written = json.loads(Path(aborted.value.result_path).read_text())
    assert written["incomplete"] is True
    assert written["stopReason"] == "interrupted"
    assert written["totalMessagesSent"] > 0
    assert len(written["publishRate"]) >= 2
    # without a drain, messages still in flight are not lost: loss is unknown, the rest counted
    assert written["totalLost"] is None
    assert (written["totalDuplicates"], written["totalOutOfOrder"]) == (0, 0)


def test_producer_only_workload_needs_no_consumers(tmp_path):
    report = run_one(
        RunRequest(
            workload(subscriptionsPerTopic=0),
            MEMORY,
            RunOptions(duration_s=1, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    assert report.result["totalMessagesReceived"] == 0
    assert report.result["totalMessagesSent"] > 0
    assert report.result["aggregatedEndToEndLatency99pct"] == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"producersPerTopic": 0}, "producersPerTopic"),
    ],
)
def test_scenarios_not_built_yet_are_refused_with_the_field_named(tmp_path, overrides, field):
    with pytest.raises(ConfigError) as caught:
        run_one(
            RunRequest(workload(**overrides), MEMORY, RunOptions(duration_s=1), out_dir=tmp_path)
        )
    assert field in str(caught.value)


def test_named_topics_are_used_as_given_and_never_deleted():
    from loadgen.engine.payload import build_payloads
    from loadgen.running.lifecycle import run_workload
    from loadgen_drivers.memory import Driver

    driver = Driver.from_config(MEMORY)
    deleted = []
    driver.delete_topics = deleted.extend  # the real driver, with deletions recorded
    chosen = workload(subscriptionsPerTopic=1, producersPerTopic=1)
    options = RunOptions(duration_s=1, warmup_s=0, stats_interval_s=1, topic_names=("given",))
    outcome = run_workload(LocalWorker(driver), chosen, build_payloads(chosen, None), options)
    assert outcome.topics == ["given"] and not outcome.incomplete
    assert outcome.totals.received == outcome.totals.sent > 0
    assert deleted == []


def test_topic_names_must_match_the_topic_count():
    from loadgen.running.lifecycle import run_workload
    from loadgen_drivers.memory import Driver

    options = RunOptions(duration_s=1, topic_names=("only-one",))
    with pytest.raises(ConfigError, match="topic name"):
        run_workload(
            LocalWorker(Driver.from_config(MEMORY)), workload(topics=2), [b"x" * 256], options
        )
