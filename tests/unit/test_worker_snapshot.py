"""How a worker's snapshot counts deliveries (skewed clocks, messages without a send time), and
what the worker prepares for it."""

import time

import pytest

from loadgen.base import hdr
from loadgen.driver_api import NO_SEND_TIME_NS
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.stats import END_TO_END, END_TO_END_FROM_INTENDED
from loadgen_drivers.memory import Driver


def test_unstamped_messages_count_as_received_but_neither_as_latency_nor_as_skew():
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    [topic] = worker.create_topics(1, 1)
    worker.create_consumers([(topic, "sub")])
    recorder = worker._consumer_recorders[0]  # the callback the driver would call
    now = time.time_ns()
    recorder.on_message(b"x", now - 2_000_000, 0, now - 3_000_000, 0)  # 2 ms ago
    # a producer clock a minute ahead
    recorder.on_message(b"x", now + 60_000_000_000, 1, now + 60_000_000_000, 0)
    recorder.on_message(b"x", NO_SEND_TIME_NS, 2, NO_SEND_TIME_NS, 0)
    stats = worker.snapshot(0, 1000, warmup=False)
    worker.close(delete_topics=True)
    assert stats.received == 3
    assert stats.negative_e2e == 1
    assert stats.histogram(END_TO_END).total == 1
    assert stats.histogram(END_TO_END_FROM_INTENDED).total == 1


def test_histogram_layouts_are_built_with_the_worker_not_in_its_first_snapshot():
    hdr.layout.cache_clear()
    LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    assert hdr.layout.cache_info().currsize == len(hdr.HIGHEST_TRACKABLE_US)


def test_a_snapshot_after_a_consumer_failed_to_start_counts_the_ones_that_did(monkeypatch):
    """Ctrl-C or an error while consumers are created cuts the run short with a snapshot: the
    subscription whose consumer never started must not be asked for in it."""
    worker = LocalWorker(Driver.from_config(DriverSpec(name="mem", kind="memory")))
    topic = worker.create_topics(1, 1)[0]
    create = worker.driver.create_consumer

    def second_fails(topic_name, subscription, on_message):
        if subscription == "second":
            raise KeyboardInterrupt
        return create(topic_name, subscription, on_message)

    monkeypatch.setattr(worker.driver, "create_consumer", second_fails)
    with pytest.raises(KeyboardInterrupt):
        worker.create_consumers([(topic, "first"), (topic, "second")])
    stats = worker.snapshot(0, 1000, warmup=False)
    assert stats.received == 0
    assert worker.ledger.consumer_subscriptions == [(topic, "first")]
