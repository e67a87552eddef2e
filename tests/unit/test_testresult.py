"""OMB TestResult JSON: field names and order, units, backlog, and loadgen's additions."""

import json
import re
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from loadgen.base import hdr
from loadgen.base.files import result_stem, write_json_atomic
from loadgen.engine.accounting import Accounting
from loadgen.engine.local_worker import Totals
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import (
    END_TO_END,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    TRANSACTION_ABORT,
    TRANSACTION_COMMIT,
    IntervalStats,
)
from loadgen.formats.result_json import ResultHeader, build_test_result

HEADER = ResultHeader("w", "Kafka", 1024, 1, 16, 1, 1, subscriptions_per_topic=2)

LATENCY = ["Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "Max"]
OMB_ORDER = (
    [
        "workload",
        "driver",
        "messageSize",
        "topics",
        "partitions",
        "producersPerTopic",
        "consumersPerTopic",
        "publishRate",
        "publishErrorRate",
        "consumeRate",
        "backlog",
    ]
    + [f"publishLatency{s}" for s in LATENCY]
    + [f"publishDelayLatency{s}" for s in LATENCY]
    + [f"aggregatedPublishLatency{s}" for s in LATENCY]
    + [f"aggregatedPublishDelayLatency{s}" for s in LATENCY]
    + ["aggregatedPublishLatencyQuantiles", "aggregatedPublishDelayLatencyQuantiles"]
    + [f"endToEndLatency{s}" for s in LATENCY]
    + ["aggregatedEndToEndLatencyQuantiles"]
    + [f"aggregatedEndToEndLatency{s}" for s in LATENCY]
)


def interval(start, *, sent, received, warmup=False, publish_us=(1500, 2500), e2e_us=(3000,)):
    ns = lambda values: np.array(values, dtype=np.int64) * 1000  # noqa: E731
    return IntervalStats(
        start_ms=start,
        end_ms=start + 10_000,
        sent=sent,
        received=received,
        send_errors=1,
        bytes_sent=sent * 1024,
        bytes_received=received * 1024,
        warmup=warmup,
        histograms={
            PUBLISH: hdr.record_ns(PUBLISH, ns(publish_us)),
            PUBLISH_DELAY: hdr.record_ns(PUBLISH_DELAY, ns([70, 90])),
            PUBLISH_FROM_INTENDED: hdr.record_ns(PUBLISH_FROM_INTENDED, ns([1600, 2600])),
            END_TO_END: hdr.record_ns(END_TO_END, ns(e2e_us)),
        },
    )


@pytest.fixture
def result():
    intervals = [
        interval(0, sent=1000, received=1500, warmup=True),
        interval(10_000, sent=2000, received=3000),
        interval(20_000, sent=2000, received=4500, publish_us=(1000, 9000)),
    ]
    probed = Totals(probe_sent=1, probe_received=2)
    return build_test_result(HEADER, RunOutcome(intervals, probed), run={"host": "h"})


def test_omb_fields_come_first_in_omb_order_then_only_additions(result):
    keys = list(result)
    assert keys[: len(OMB_ORDER)] == OMB_ORDER
    assert keys[len(OMB_ORDER) :] == [
        "totalMessagesSent",
        "totalMessagesReceived",
        "totalPublishErrors",
        "negativeEndToEnd",
        *[f"aggregatedPublishFromIntendedLatency{s}" for s in LATENCY],
        *[f"aggregatedEndToEndFromIntendedLatency{s}" for s in LATENCY],
        "totalDuplicates",
        "totalLost",
        "totalOutOfOrder",
        "lossDetected",
        "deliveryAccounting",
        "totalUnread",
        "totalAbortedRead",
        "duplicates",
        "outOfOrder",
        "histograms",
        "verdicts",
        "incomplete",
        "run",
    ]


def test_periods_exclude_warmup_and_rates_are_per_second(result):
    assert result["publishRate"] == [200.0, 200.0]
    assert result["consumeRate"] == [300.0, 450.0]
    assert result["publishErrorRate"] == [0.1, 0.1]


def test_backlog_uses_running_totals_including_warmup(result):
    # after interval 2: 2 × 3000 − 4500 = 1500; after 3: 2 × 5000 − 9000 = 1000
    assert result["backlog"] == [1500, 1000]


def test_units_are_ms_except_publish_delay_in_integer_microseconds(result):
    assert result["publishLatency50pct"] == [1.5, 1.0]
    assert result["aggregatedPublishLatencyMax"] == pytest.approx(9.0, abs=0.001)
    assert result["publishDelayLatency50pct"] == [70, 70]
    assert isinstance(result["aggregatedPublishDelayLatency99pct"], int)
    assert result["aggregatedEndToEndLatency50pct"] == 3.0
    assert all(
        isinstance(v, int) for v in result["aggregatedPublishDelayLatencyQuantiles"].values()
    )
    assert list(result["aggregatedPublishLatencyQuantiles"])[-1] == "100.0"


def test_totals_include_warmup_and_probe(result):
    assert result["totalMessagesSent"] == 1 + 5000
    assert result["totalMessagesReceived"] == 2 + 9000
    assert result["totalPublishErrors"] == 3


def test_histogram_blobs_reproduce_the_published_percentiles(result):
    blob = result["histograms"]["publish"]["aggregated"]
    again = hdr.decode(PUBLISH, blob)
    assert hdr.value_at_percentile(again, 99) / 1000 == result["aggregatedPublishLatency99pct"]
    assert len(result["histograms"]["endToEnd"]["periods"]) == 2


def test_incomplete_run_says_why():
    cut_short = RunOutcome(
        [interval(0, sent=1, received=1)], incomplete=True, stop_reason="interrupted"
    )
    document = build_test_result(HEADER, cut_short, run={})
    assert document["incomplete"] is True and document["stopReason"] == "interrupted"


def test_no_measured_interval_gives_empty_lists_and_zeros():
    warmup_only = RunOutcome([interval(0, sent=1, received=1, warmup=True)])
    document = build_test_result(HEADER, warmup_only, run={})
    assert document["publishRate"] == [] and document["aggregatedPublishLatency99pct"] == 0.0
    assert document["aggregatedEndToEndLatencyQuantiles"] == {}
    json.dumps(document, allow_nan=False)


def test_result_stem_is_file_safe_and_utc():
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert result_stem("1 producer / 1 consumers on 1 topic", "Kafka", when) == (
        "1-producer-1-consumers-on-1-topic-Kafka-2026-01-02-03-04-05"
    )
    assert re.fullmatch(r"unnamed-x-\d{4}(-\d\d){5}", result_stem("///", "x", when))


def test_atomic_write_leaves_only_the_finished_file(tmp_path):
    target = tmp_path / "r.json"
    write_json_atomic(target, {"a": 1})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    with pytest.raises(ValueError):
        write_json_atomic(target, {"a": float("nan")})
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_delivery_counts_are_null_when_the_run_could_not_account(result):
    counts = ("totalDuplicates", "totalLost", "totalOutOfOrder", "lossDetected")
    assert [result[name] for name in counts] == [None] * 4
    assert result["deliveryAccounting"] is None


def test_delivery_counts_come_from_the_accounting_and_periods_from_the_intervals():
    rows = [{"topic": "t", "subscription": "s", "duplicates": 2, "outOfOrder": 1, "lost": 3}]
    outcome = RunOutcome(
        [
            replace(interval(0, sent=1, received=1, warmup=True), duplicates=1),
            replace(interval(1000, sent=1, received=1), duplicates=1, out_of_order=1),
        ],
        accounting=Accounting(duplicates=2, out_of_order=1, lost=3, subscriptions=rows),
    )
    document = build_test_result(HEADER, outcome, run={})
    assert (document["totalDuplicates"], document["totalLost"]) == (2, 3)
    assert document["totalOutOfOrder"] == 1 and document["lossDetected"] is True
    assert document["deliveryAccounting"] == rows
    assert (document["duplicates"], document["outOfOrder"]) == ([1], [1])


def test_transactions_block_counts_the_whole_run_and_times_the_measured_phase():
    ms = lambda values: np.array(values, dtype=np.int64) * 1_000_000  # noqa: E731
    warm = replace(interval(0, sent=5, received=5, warmup=True), withdrawn=3)
    warm.histograms[TRANSACTION_COMMIT] = hdr.record_ns(TRANSACTION_COMMIT, ms([90]))
    warm.histograms[TRANSACTION_ABORT] = hdr.record_ns(TRANSACTION_ABORT, ms([]))
    measured = replace(interval(10_000, sent=8, received=8), withdrawn=4)
    measured.histograms[TRANSACTION_COMMIT] = hdr.record_ns(TRANSACTION_COMMIT, ms([2, 4]))
    measured.histograms[TRANSACTION_ABORT] = hdr.record_ns(TRANSACTION_ABORT, ms([1]))
    accounting = Accounting(0, 0, 0, [], aborted_read=0)
    document = build_test_result(
        HEADER, RunOutcome([warm, measured], accounting=accounting), run={}
    )
    block = document["transactions"]
    assert (block["committed"], block["aborted"], block["messagesWithdrawn"]) == (3, 1, 7)
    assert block["commitLatency"]["Max"] == pytest.approx(4, rel=1e-3)  # not the warm-up's 90
    assert block["abortedMessagesRead"] == 0 == document["totalAbortedRead"]
    assert {TRANSACTION_COMMIT, TRANSACTION_ABORT} <= document["histograms"].keys()


def test_a_run_without_transactions_has_no_transactions_block(result):
    assert "transactions" not in result and "transactionCommit" not in result["histograms"]
