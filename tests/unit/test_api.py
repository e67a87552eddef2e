"""The Python API on the in-process memory broker: build, run, inspect, save, assert."""

import asyncio
import dataclasses
import json

import pytest

import loadgen
from harness.rates import judge_rate, skip_if_host_busy
from loadgen.base.errors import ConfigError

MEMORY = loadgen.driver("memory")
STREAM = {
    "name": "api stream",
    "topics": 1,
    "partitionsPerTopic": 2,
    "messageSize": 100,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 2000,
    "testDurationMinutes": 1,
}


@pytest.fixture(scope="module")
def result():
    return loadgen.run(STREAM, MEMORY, duration="2s", warmup=0)


def test_a_run_reports_counts_rates_and_latencies(result):
    judge_rate(result.document, result.publish_rate, 2000, rel=0.02)
    assert result.sent == result.received > 3900
    assert (result.errors, result.missing, result.incomplete) == (0, 0, False)
    assert result.e2e.count == result.received - 1  # the readiness probe is not measured
    assert 0 < result.e2e.p50_ms <= result.e2e.p99_ms <= result.e2e.p999_ms <= result.e2e.max_ms
    assert set(result.phase_seconds) >= {"connect", "topics", "probe", "measure", "drain"}


def test_latencies_are_the_numbers_of_the_result_document(result):
    document = result.document
    assert result.e2e.p99_ms == document["aggregatedEndToEndLatency99pct"]
    assert result.publish.percentile(99.9) == document["aggregatedPublishLatency999pct"]
    assert result.e2e.max_ms == document["aggregatedEndToEndLatencyMax"]


def test_save_writes_the_document_the_cli_writes(result, tmp_path):
    path = result.save(tmp_path / "deep" / "result.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(result.document))
    assert result.document["driver"] == "memory" and result.document["workload"] == "api stream"


def test_the_table_shows_every_metric(result):
    table = result.table()
    for row in ("publish", "publish delay", "publish from intended", "end-to-end"):
        assert f"\n{row} " in table
    assert "p99.9" in table and "sent 4," in table


def test_arun_returns_the_same_kind_of_result():
    async def main():
        return await loadgen.arun(STREAM, MEMORY, duration=1, warmup=0)

    outcome = asyncio.run(main())
    assert outcome.sent == outcome.received > 0


def test_workload_fields_are_validated_like_the_yaml():
    with pytest.raises(ConfigError) as caught:
        loadgen.workload(**{**STREAM, "producerRate": "fast"})
    assert caught.value.path == "producerRate" and caught.value.file == "<python>"
    with pytest.raises(ConfigError, match="did you mean 'messageSize'"):
        loadgen.workload(**{**STREAM, "messageSise": 10})
    assert loadgen.workload(**STREAM).producer_rate == 2000


def test_driver_fields_are_checked_by_the_driver():
    with pytest.raises(ConfigError, match="did you mean 'queueType'"):
        loadgen.driver("rabbitmq", amqpUris=["amqp://h"], queueTyp="QUORUM")
    with pytest.raises(ConfigError) as caught:
        loadgen.driver("kafak")
    assert "kafka" in caught.value.allowed


def test_short_stats_intervals_are_refused():
    with pytest.raises(ConfigError, match="at least 1 s"):
        loadgen.run(STREAM, MEMORY, duration=1, stats_interval="500ms")


def test_assert_slo_passes_quietly_when_met(result):
    if result.publish_rate < 1900:
        skip_if_host_busy(result.document, f"{result.publish_rate:,.0f} msg/s for 2,000")
    loadgen.assert_slo(result, "e2e.p99<=1000ms", "publish.p99<=1000ms", "publishRate>=1900")


def test_assert_slo_names_every_missed_limit_and_shows_the_table(result):
    with pytest.raises(AssertionError) as caught:
        loadgen.assert_slo(result, "e2e.p99<=0.000001ms", "publishRate>=1e9")
    message = str(caught.value)
    assert f"e2e.p99<=0.000001ms: measured {result.e2e.p99_ms:.6g} ms" in message
    assert f"publishRate>=1e9: measured {result.publish_rate:.6g}" in message
    assert result.table() in message


def test_assert_slo_fails_a_lossy_or_erroring_run_by_default(result):
    lossy = dataclasses.replace(result, errors=3, missing=7)
    with pytest.raises(AssertionError, match=r"errors<=0: measured 3") as caught:
        loadgen.assert_slo(lossy)
    assert "missing<=0: measured 7" in str(caught.value)
    loadgen.assert_slo(lossy, "errors<=3", "missing<=7")
    with pytest.raises(AssertionError, match=r"missing<6: measured 7"):
        loadgen.assert_slo(lossy, "errors<=3", "missing<6")


def test_assert_slo_judges_the_verdicts_named_and_a_failed_drain_by_default(result):
    verdicts = result.document["verdicts"]
    assert verdicts["rate"]["held"] is (result.publish_rate >= 0.99 * 2000)
    assert verdicts["consumers"]["keptUp"] is True  # 2,000 msg/s: the memory broker keeps up
    loadgen.assert_slo(result, "consumers.keptUp", "backlog.growth<200")
    with pytest.raises(AssertionError, match=r"drain\.completed: not judged"):
        loadgen.assert_slo(result, "drain.completed")  # not a catch-up run
    stalled = {"completed": False, "reason": "stalled"}
    undrained = {**result.document, "verdicts": {**verdicts, "drain": stalled}}
    with pytest.raises(AssertionError, match="the catch-up drain did not come"):
        loadgen.assert_slo(dataclasses.replace(result, document=undrained))


def test_assert_slo_keywords_name_the_expressions_to_write_instead(result):
    with pytest.raises(TypeError) as caught:
        loadgen.assert_slo(result, e2e_p99_ms=60000)
    assert str(caught.value) == (
        "assert_slo() takes threshold expressions, not keywords (e2e_p99_ms=): "
        'write assert_slo(result, "e2e.p99<=60000ms")'
    )
    with pytest.raises(TypeError) as caught:
        loadgen.assert_slo(result, "rate>=0.5", max_missing=5, e2e_p999_ms=2.5)
    written = 'assert_slo(result, "missing<=5", "e2e.p99.9<=2.5ms", "rate>=0.5")'
    assert str(caught.value).endswith(f"write {written}")
    loadgen.assert_slo(result, "e2e.p99<=60000ms", "missing<=5")  # what it says works
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'p99'.*--slo"):
        loadgen.assert_slo(result, p99=5)


def test_a_clean_run_counts_no_lost_duplicated_or_reordered_message(result):
    assert (result.lost, result.duplicates, result.out_of_order) == (0, 0, 0)
    assert result.e2e_from_intended.count == result.e2e.count
    assert "\ne2e from intended " in result.table()


def test_assert_slo_fails_lost_or_duplicated_messages_by_default(result):
    lossy = dataclasses.replace(result, lost=4, duplicates=2)
    with pytest.raises(AssertionError, match=r"lost<=0: measured 4") as caught:
        loadgen.assert_slo(lossy)
    assert "duplicates<=0: measured 2" in str(caught.value)
    loadgen.assert_slo(lossy, "lost<=4", "duplicates<=2")
    unknown = dataclasses.replace(result, lost=None, duplicates=None)  # no ids: not judged
    loadgen.assert_slo(unknown)
    with pytest.raises(AssertionError, match="lost<=4"):  # asked for, and not measured
        loadgen.assert_slo(unknown, "lost<=4")


def test_a_pipeline_directory_gets_every_interval_and_the_end_marker(tmp_path):
    landed = loadgen.run(STREAM, MEMORY, duration="2s", warmup=0, pipeline=tmp_path / "landing")
    files = sorted(p.name for p in (tmp_path / "landing").iterdir())
    run_id = landed.document["run"]["runId"]
    assert files == [
        f"{run_id}-local-000000.json",
        f"{run_id}-local-000001.json",
        f"{run_id}-local-end.json",
    ]
    last = json.loads((tmp_path / "landing" / files[1]).read_text().splitlines()[0])
    assert last["hist"] == landed.document["histograms"]["publish"]["periods"][1]
