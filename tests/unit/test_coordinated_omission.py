"""A 200 ms producer stall on the memory broker: latencies from the intended send time show it at
the percentile the schedule predicts; the plain ones (timed from the actual send) hide it."""

import pytest

from loadgen.api import driver, run, workload

RATE, SECONDS, STALL_MS = 2000, 2.0, 200
PERCENTILES = (50, 75, 90, 95, 99, 99.9, 99.99)


@pytest.fixture(scope="module")
def stalled():
    spec = driver("memory", stallMs=STALL_MS, stallAfter=RATE // 2)
    load = workload(
        name="stall",
        topics=1,
        partitionsPerTopic=1,
        messageSize=64,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=RATE,
        testDurationMinutes=1,
        warmupDurationMinutes=0,
    )
    return run(load, spec, duration=SECONDS, warmup=0, stats_interval=1)


def test_from_intended_latencies_are_never_below_the_plain_ones(stalled):
    for corrected, plain in (
        (stalled.publish_from_intended, stalled.publish),
        (stalled.e2e_from_intended, stalled.e2e),
    ):
        assert corrected.count == plain.count == stalled.sent - 1  # all but the probe
        for percentile in PERCENTILES:
            assert corrected.percentile(percentile) >= plain.percentile(percentile), percentile
        assert corrected.max_ms >= plain.max_ms


def test_the_stall_shows_at_the_predicted_percentile_only_from_intended(stalled):
    """Where the stall must show, from the schedule alone.

    The producer sends RATE = 2000 msg/s for SECONDS = 2 s: N = 4000 messages. Half a second in,
    one send blocks for STALL_MS = 200 ms; the 2000 × 0.2 = 400 messages due meanwhile go out
    right after it, each late by 200 ms minus how far into the stall it was due, so their
    latencies from the intended time spread evenly over (0, 200] ms. The messages above x ms
    are those due in the stall's first 200 − x ms: 2 × (200 − x) of 4000. Percentile q is where
    that share is 1 − q/100: x = 200 − 2000 × (1 − q/100) ms, so p99 ≈ 180 ms, p95 ≈ 100 ms and
    p90 ≈ 0. Plain publish latency (ack − actual send) has one slow message in 4000 and plain
    end-to-end none (the memory broker stamps the send after the stall), so both stay at the
    broker's own few milliseconds at p95 and p99. The bands leave room for the catch-up burst
    and a busy machine, and are far apart: a stall that is not seen cannot pass.
    """
    for corrected, plain in (
        (stalled.publish_from_intended, stalled.publish),
        (stalled.e2e_from_intended, stalled.e2e),
    ):
        assert 160 <= corrected.percentile(99) <= 215
        assert 80 <= corrected.percentile(95) <= 125
        assert corrected.max_ms >= STALL_MS * 0.98
        assert plain.percentile(99) < 20 and plain.percentile(95) < 20
