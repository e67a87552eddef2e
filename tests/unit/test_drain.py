"""The drain after the measurement: it waits for every message sent, a duplicate delivered
earlier does not stand in for one still on its way, and counts that cannot tell (a failed send
the broker stored, a duplicate) have the broker asked what it still holds."""

import time

from tests.unit.test_sizing import workload as sizing_workload

from loadgen.engine.listeners import Listeners
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import IntervalStats
from loadgen.running.lifecycle import _account, _finish, _Measurement
from loadgen.running.request import RunOptions

SENT = 100


class LateLastMessage:
    """A worker whose consumers have 100 deliveries, one of them a duplicate from earlier
    (a redelivery after a reconnect), and whose last message arrives 0.3 s into the drain."""

    def __init__(self):
        self.drain_started = None

    def stop_load(self, flush_timeout_s):
        self.drain_started = time.monotonic()
        return 0

    def sent_so_far(self):
        return SENT

    def received_so_far(self):
        late = time.monotonic() - self.drain_started >= 0.3
        return SENT + (1 if late else 0)  # 99 distinct + 1 duplicate, then the late one

    def snapshot(self, start_ms, end_ms, *, warmup):
        return IntervalStats(start_ms, end_ms, received=1)


def drained(worker, **sent_interval):
    workload = sizing_workload(subscriptionsPerTopic=1)
    options = RunOptions(drain_timeout_s=5.0)
    measurement = _Measurement(worker, workload, options, Listeners(()))
    measurement.intervals.append(IntervalStats(0, 1000, sent=SENT, received=SENT, **sent_interval))
    outcome = RunOutcome()
    _finish(worker, measurement, workload, options, outcome)
    return outcome


def test_a_duplicate_received_earlier_does_not_end_the_drain_before_the_last_message():
    outcome = drained(LateLastMessage(), duplicates=1)
    assert outcome.undelivered == 0
    assert 0.3 <= outcome.drain_seconds < 5.0  # it waited for the late one, not the timeout


class StoredFailureInPlaceOfALateMessage(LateLastMessage):
    """100 acknowledged, and one send counted failed that the broker stored all the same (its
    confirm lost with a connection): it arrives in place of an acknowledged one still missing."""

    def received_so_far(self):
        return SENT


def test_counts_that_balance_with_a_failed_send_are_inconclusive():
    outcome = drained(StoredFailureInPlaceOfALateMessage(), send_errors=1)
    assert outcome.undelivered == 0  # the counts balance...
    assert outcome.counts_inconclusive  # ...but cannot show that each acknowledged one arrived


def test_counts_of_a_clean_run_are_conclusive():
    outcome = drained(StoredFailureInPlaceOfALateMessage())
    assert (outcome.undelivered, outcome.counts_inconclusive) == (0, False)


class Ledgers:
    """A worker's accounting side: records whether it was told to ask the broker."""

    def __init__(self):
        self.asked = []

    def accounting(self, *, ask_broker=False):
        self.asked.append(ask_broker)
        return []


def test_the_broker_is_asked_what_it_holds_when_the_counts_are_inconclusive():
    asked = {}
    for inconclusive in (False, True):
        worker = Ledgers()
        _account(worker, RunOutcome(counts_inconclusive=inconclusive), ask_broker=True)
        asked[inconclusive] = worker.asked
    assert asked == {False: [False], True: [True]}
