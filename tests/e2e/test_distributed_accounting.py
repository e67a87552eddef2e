"""Accounting over two worker processes (``processes=2``) on the memory broker: each process
runs whole topics, its id ranges travel to the coordinator at the end, and the merged result
still counts exactly what the brokers did."""

import pytest

from loadgen.api import driver, run, workload

TOPICS, PRODUCERS_PER_TOPIC, SUBSCRIPTIONS = 2, 2, 2
DROP, DUPLICATE = 11, 13


@pytest.fixture(scope="module")
def result():
    load = workload(
        name="accounting over processes",
        topics=TOPICS,
        partitionsPerTopic=2,
        messageSize=64,
        subscriptionsPerTopic=SUBSCRIPTIONS,
        consumerPerSubscription=2,
        producersPerTopic=PRODUCERS_PER_TOPIC,
        producerRate=3000,
        testDurationMinutes=1,
        warmupDurationMinutes=0,
    )
    spec = driver("memory", dropEvery=DROP, duplicateEvery=DUPLICATE)
    return run(load, spec, duration=2, warmup=1, processes=2)


def test_both_processes_took_part(result):
    totals = result.document["run"]["workerTotals"]
    assert len(totals) == 2 and all(t["sent"] > 1000 for t in totals.values())


def test_counts_are_exact_over_processes(result):
    """Each process runs one topic with its two producers; within a process the loop deals
    messages round robin over its producers, so each producer's count follows from the
    process's sent total (less its two probes). A message whose count is a multiple of both
    DROP and DUPLICATE is dropped (the drop comes first), so it is not also duplicated."""
    lost = duplicates = 0
    for totals in result.document["run"]["workerTotals"].values():
        sent = totals["sent"] - totals["probeSent"]
        for p in range(PRODUCERS_PER_TOPIC):
            n = sent // PRODUCERS_PER_TOPIC + (p < sent % PRODUCERS_PER_TOPIC)
            lost += n // DROP
            duplicates += n // DUPLICATE - n // (DROP * DUPLICATE)
    assert lost > 100 and duplicates > 100
    assert result.lost == SUBSCRIPTIONS * lost
    assert result.duplicates == SUBSCRIPTIONS * duplicates
    assert result.out_of_order == 0
    assert result.document["lossDetected"] is True
    rows = result.document["deliveryAccounting"]
    assert len(rows) == TOPICS * SUBSCRIPTIONS
    assert sum(row["lost"] for row in rows) == result.lost
