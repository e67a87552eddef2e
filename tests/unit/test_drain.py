"""The drain after the measurement: it waits for every message sent, and a duplicate delivered
earlier does not stand in for one still on its way."""

import time

from tests.unit.test_sizing import workload as sizing_workload

from loadgen.listeners import Listeners
from loadgen.outcome import RunOutcome
from loadgen.request import RunOptions
from loadgen.scenarios.tailing import _finish, _Measurement
from loadgen.stats import IntervalStats

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


def test_a_duplicate_received_earlier_does_not_end_the_drain_before_the_last_message():
    workload = sizing_workload(subscriptionsPerTopic=1)
    options = RunOptions(drain_timeout_s=5.0)
    worker = LateLastMessage()
    measurement = _Measurement(worker, workload, options, Listeners(()))
    measurement.intervals.append(IntervalStats(0, 1000, sent=SENT, received=SENT, duplicates=1))
    outcome = RunOutcome()
    _finish(worker, measurement, workload, options, outcome)
    assert outcome.undelivered == 0
    assert 0.3 <= outcome.drain_seconds < 5.0  # it waited for the late one, not the timeout
