"""Asking consumers what their broker still holds: bounded in time, whatever a client does."""

import threading
import time

from loadgen.engine.unread import unread_by_subscription


class Counting:
    def __init__(self, counts):
        self.counts = counts

    def unread(self, timeout_s):
        return self.counts


class Hanging:
    """A client call that ignores its timeout (Kafka's ``assignment()`` after a broker restart
    waited more than 30 s)."""

    def __init__(self):
        self.release = threading.Event()

    def unread(self, timeout_s):
        self.release.wait(60)
        return {"0": 7}


class Failing:
    def unread(self, timeout_s):
        raise RuntimeError("channel closed")


class NotAsked:
    """A consumer without :class:`loadgen.driver_api.Backlog` (Pulsar, memory)."""


A, B, C = ("t", "a"), ("t", "b"), ("t", "c")


def test_consumers_of_one_subscription_add_their_partitions():
    found = unread_by_subscription(
        [Counting({"0": 3}), Counting({"1": 4}), Counting({"q": 0})], [A, A, B], 2.0
    )
    assert found == {A: {"0": 3, "1": 4}, B: {"q": 0}}


def test_a_consumer_that_cannot_say_leaves_its_subscription_unknown():
    found = unread_by_subscription(
        [Counting({"0": 3}), NotAsked(), Failing(), Counting(None)], [A, A, B, C], 2.0
    )
    assert found == {A: None, B: None, C: None}


def test_a_client_call_that_hangs_costs_the_timeout_and_no_more():
    hanging = Hanging()
    started = time.monotonic()
    try:
        found = unread_by_subscription([Counting({"0": 1}), hanging], [A, B], 0.5)
        took = time.monotonic() - started
    finally:
        hanging.release.set()
    assert found == {A: {"0": 1}, B: None}
    assert 0.5 <= took < 5.0  # the wait's own length; the 60 s hang is not waited out
