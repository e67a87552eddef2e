"""Outage windows: from running counters (synthetic), and from a stalled memory-driver run."""

import logging

import loadgen
from loadgen.engine.local_worker import Progress
from loadgen.running.scenarios.outages import OutageWatch, threshold_for

MEMORY = loadgen.driver("memory", name="Memory")


def feed(watch, readings):
    """``readings``: (ms, acked, received, errors[, consuming])."""
    for ms, acked, received, errors, *consuming in readings:
        watch.observe(ms, Progress(acked, received, errors), consuming=consuming != [False])


def test_threshold_is_one_second_or_twenty_messages():
    assert threshold_for(1000) == 1.0
    assert threshold_for(5) == 4.0
    assert threshold_for(0) == 1.0


def test_a_gap_in_acknowledgements_is_one_publish_outage_with_its_errors(caplog):
    watch = OutageWatch(1.0, subscriptions=1, start_ms=0)
    with caplog.at_level(logging.WARNING, "loadgen.run"):
        feed(
            watch,
            [
                (250, 100, 100, 0),
                (500, 200, 200, 3),  # last progress at 500 ms, 3 errors by then
                (750, 200, 200, 10),
                (1250, 200, 200, 40),  # 0.75 s: not yet
                (1500, 200, 200, 50),  # 1.0 s: the outage opens, starting at 500
                (3000, 200, 200, 90),
                (3250, 260, 260, 95),  # back
                (3500, 400, 400, 95),
            ],
        )
    [outage] = watch.report(run_end_ms=4000)
    assert outage == {
        "role": "publish",
        "startMs": 500,
        "endMs": 3250,
        "seconds": 2.75,
        "recovered": True,
        "publishErrors": 92,
    }
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("no acknowledgements for 1.0 s")
    assert messages[1].startswith("acknowledgements resumed after a 2.8 s outage (92 publish")


def test_deliveries_that_stop_while_messages_are_due_are_a_consume_outage():
    watch = OutageWatch(1.0, subscriptions=2, start_ms=0)
    feed(
        watch,
        [
            (250, 100, 200, 0),
            (500, 200, 300, 0),  # 2 subscriptions: 400 due, 300 received
            (1000, 300, 300, 0),
            (1600, 400, 300, 0),  # acks go on, deliveries stopped at 500 ms
            (2000, 500, 300, 0),
        ],
    )
    [outage] = watch.report(run_end_ms=2500)
    assert outage["role"] == "consume" and outage["startMs"] == 500
    assert outage["endMs"] is None and outage["recovered"] is False and outage["seconds"] == 2.0


def test_nothing_due_or_consumers_paused_is_not_an_outage():
    watch = OutageWatch(1.0, subscriptions=1, start_ms=0)
    feed(
        watch,
        [
            (250, 100, 100, 0),
            (2000, 200, 100, 0, False),  # catch-up: consumers paused on purpose
            (4000, 300, 100, 0, False),
            (4500, 400, 150, 0),  # resumed
            (5000, 500, 500, 0),
            (7000, 600, 600, 0),  # slow but moving: fine
        ],
    )
    assert watch.report(run_end_ms=7000) == []


def test_acknowledgements_that_stop_with_the_producers_are_not_an_outage():
    watch = OutageWatch(1.0, subscriptions=1, start_ms=0)
    watch.observe(250, Progress(100, 50, 0))
    watch.observe(500, Progress(200, 100, 0))  # producers stop here, every message acknowledged
    watch.observe(3000, Progress(200, 200, 0), publishing=False)  # a long drain
    assert watch.report(run_end_ms=3000) == [] and not watch.silent()


def test_a_broker_that_stops_acknowledging_is_silent_until_it_acknowledges_again():
    watch = OutageWatch(1.0, subscriptions=1, start_ms=0)
    feed(watch, [(250, 100, 100, 0), (1500, 100, 100, 0)])
    assert watch.silent()
    feed(watch, [(3000, 100, 100, 0)])  # the drain: messages still unacknowledged
    assert watch.silent() and watch.report(run_end_ms=3000)[0]["recovered"] is False
    feed(watch, [(3250, 150, 150, 0)])
    assert not watch.silent()


def test_a_stalled_send_shows_as_an_outage_in_the_result_and_only_there(tmp_path):
    driver = loadgen.driver("memory", name="Memory", stallMs=2500, stallAfter=1500)
    workload = {
        "name": "stall",
        "topics": 1,
        "partitionsPerTopic": 1,
        "messageSize": 64,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": 1000,
        "testDurationMinutes": 1,
    }
    result = loadgen.run(workload, driver, duration=6, warmup=0)
    [outage] = result.document["outages"]
    assert outage["role"] == "publish" and outage["recovered"] is True
    assert 2.0 <= outage["seconds"] <= 3.5
    clean = loadgen.run(workload, MEMORY, duration=3, warmup=0)
    assert clean.document["outages"] == []
