"""OMB's max-sustainable-rate search (``producerRate: 0``): the backlog-driven RateController.

A pure function of the running totals, so it is tested with OMB's own examples:
every period the controller compares what should have been sent with what was sent and
received; a receive backlog or a publish backlog above its limit ramps the rate down to what
was achieved, otherwise the rate grows by ``1 + factor``. The factor doubles on each ramp-up
(up to :data:`MAX_RAMPING_FACTOR`) and halves on each ramp-down (down to
:data:`MIN_RAMPING_FACTOR`), so the search overshoots less and less.
"""

from __future__ import annotations

from dataclasses import dataclass

INITIAL_RATE = 10_000.0
"""OMB starts the search at 10 000 msg/s in total."""
PERIOD_S = 3.0
"""OMB adjusts the rate every 3 s."""
RECEIVE_BACKLOG_LIMIT = 1000
PUBLISH_BACKLOG_LIMIT = 1000
MAX_RAMPING_FACTOR = 1.0
MIN_RAMPING_FACTOR = 0.01

RAMP_UP = "ramp-up"
RECEIVE_BACKLOG = "receive-backlog"
PUBLISH_BACKLOG = "publish-backlog"


@dataclass(frozen=True)
class Decision:
    """The next rate and why (:data:`RAMP_UP`, :data:`RECEIVE_BACKLOG`, :data:`PUBLISH_BACKLOG`)."""

    rate: float
    reason: str


class RateController:
    """OMB's ``RateController.nextRate``, state and all (previous totals, ramping factor)."""

    def __init__(
        self,
        *,
        receive_backlog_limit: int = RECEIVE_BACKLOG_LIMIT,
        publish_backlog_limit: int = PUBLISH_BACKLOG_LIMIT,
        max_factor: float = MAX_RAMPING_FACTOR,
        min_factor: float = MIN_RAMPING_FACTOR,
    ) -> None:
        self.receive_backlog_limit = receive_backlog_limit
        self.publish_backlog_limit = publish_backlog_limit
        self.max_factor = max_factor
        self.min_factor = min_factor
        self.ramping_factor = max_factor
        self._published = 0
        self._received = 0

    def next_rate(
        self, rate: float, period_ns: int, total_published: int, total_received: int
    ) -> Decision:
        """The rate for the next period, from the running totals at the end of this one."""
        expected = rate / 1e9 * period_ns
        published = total_published - self._published
        received = total_received - self._received
        self._published, self._received = total_published, total_received
        seconds = period_ns / 1e9

        receive_backlog = total_published - total_received
        if receive_backlog > self.receive_backlog_limit:
            self._ramp_down()
            achievable = max(0.0, expected - receive_backlog)
            return Decision(min(received, achievable) / seconds, RECEIVE_BACKLOG)
        publish_backlog = expected - published
        if publish_backlog > self.publish_backlog_limit:
            self._ramp_down()
            achievable = max(0.0, expected - publish_backlog)
            return Decision(min(published, achievable) / seconds, PUBLISH_BACKLOG)
        self._ramp_up()
        return Decision(rate * (1 + self.ramping_factor), RAMP_UP)

    def _ramp_up(self) -> None:
        self.ramping_factor = min(self.max_factor, self.ramping_factor * 2)

    def _ramp_down(self) -> None:
        self.ramping_factor = max(self.min_factor, self.ramping_factor / 2)
