"""An SLO suite to copy: loadgen's pytest plugin starts a local broker, loadgen runs load
through it, and the test states the latency and throughput it needs.

    pytest examples/                                  # every broker that can start
    pytest examples/ --loadgen-broker kafka           # only Kafka (tansu)
    EXAMPLE_E2E_P99_MS=0.01 pytest examples/          # an SLO nobody meets: see the failure

Against your own cluster, pass a driver YAML (or ``loadgen.driver("kafka", ...)``) instead of
the fixture's broker.
"""

import os

import loadgen

E2E_P99_MS = float(os.environ.get("EXAMPLE_E2E_P99_MS", "100"))

STREAM = {  # OMB's workload fields; loadgen.workload() validates them like a YAML file
    "topics": 1,
    "partitionsPerTopic": 4,
    "messageSize": 512,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 1000,
    "testDurationMinutes": 1,
}
SMALL_STREAM = loadgen.workload(name="small stream", **STREAM)
KEYED_STREAM = loadgen.workload(name="keyed stream", keyDistributor="RANDOM_NANO", **STREAM)


def test_small_stream_meets_its_slo(loadgen_broker, loadgen_run):
    result = loadgen_run(SMALL_STREAM, loadgen_broker, duration="3s")
    loadgen.assert_slo(result, e2e_p99_ms=E2E_P99_MS, min_rate=990)


def test_keyed_messages_all_arrive(kafka_broker, loadgen_run):
    result = loadgen_run(KEYED_STREAM, kafka_broker, duration="2s")
    assert result.received == result.sent
    assert result.e2e.percentile(99.9) < 10 * E2E_P99_MS
