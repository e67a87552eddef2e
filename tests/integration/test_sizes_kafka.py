"""A size distribution against a real (tansu) Kafka broker: every byte counted exactly."""

from collections import Counter

import pytest

from loadgen.engine.payload import build_payloads
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

pytestmark = pytest.mark.integration


def test_sizes_100_and_4096_are_sent_and_received_to_the_byte(kafka_spec, tmp_path):
    chosen = Workload.model_validate(
        {
            "name": "sizes 100/4096",
            "topics": 1,
            "partitionsPerTopic": 2,
            "messageSizes": [{"size": 100, "weight": 3}, {"size": 4096, "weight": 1}],
            "producersPerTopic": 1,
            "subscriptionsPerTopic": 1,
            "consumerPerSubscription": 1,
            "producerRate": 500,
            "testDurationMinutes": 1,
            "warmupDurationMinutes": 0,
        }
    )
    report = run_one(
        RunRequest(
            chosen,
            kafka_spec,
            RunOptions(duration_s=3, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    intervals = report.outcome.intervals
    sent = sum(s.sent for s in intervals)
    pool = build_payloads(chosen, None)
    sizes = [len(pool[i % len(pool)]) for i in range(sent)]
    assert set(Counter(sizes)) == {100, 4096}
    assert report.result["totalPublishErrors"] == 0
    assert report.result["totalMessagesReceived"] == report.result["totalMessagesSent"]
    assert sum(s.bytes_sent for s in intervals) == sum(sizes)
    assert sum(s.bytes_received for s in intervals) == sum(sizes)
