"""What a scenario drives: one worker in this process, or an ensemble of worker processes.

:class:`loadgen.engine.local_worker.LocalWorker` is the in-process worker;
:class:`loadgen.distributed.ensemble.Ensemble` splits the same calls over worker processes (local or
on other hosts) and merges what they measured, so a scenario never knows which it drives.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from loadgen.engine.local_worker import Progress, Totals
from loadgen.engine.plan import Subscription
from loadgen.engine.stats import IntervalStats


class Worker(Protocol):
    @property
    def totals(self) -> Totals:
        """Running totals over the whole run, probe and warm-up included."""

    @property
    def has_consumers(self) -> bool: ...

    def check_reachable(self, timeout_s: float) -> None: ...

    def create_topics(
        self, count: int, partitions: int, names: tuple[str, ...] = ()
    ) -> list[str]: ...

    def create_consumers(
        self,
        subscriptions: Sequence[Subscription],
        catch_up: Collection[str] = (),
        delays: Sequence[float] = (),
    ) -> None:
        """Consumers for ``subscriptions``; those of a subscription in ``catch_up`` build and
        then read a backlog (catch-up and mixed runs), the others tail; with ``delays`` each
        sleeps per message (:mod:`loadgen.engine.slow_consumer`)."""

    def pause_catch_up(self, paused: bool) -> None:
        """Pause or resume the consumers of the catch-up subscriptions."""

    def partition_leader(self, partition: int) -> str | None:
        """The address of the node leading ``partition`` of the run's first topic, as the
        driver says (:meth:`loadgen.driver_api.BaseDriver.partition_leader`)."""

    def change_consumers(self, *, join: int, leave: int) -> None:
        """Add ``join`` consumers to every subscription, or close its ``leave`` latest ones."""

    def create_producers(self, topics: Sequence[str]) -> None:
        """One producer per entry, numbered uniquely across the run (the number is in every
        message id)."""

    def probe(self, expected_received: int, timeout_s: float) -> None: ...

    def start_load(
        self,
        rate: float,
        payloads: list[bytes],
        key_distributor: str,
        max_in_flight: int | None = None,
    ) -> None:
        """Start sending; ``max_in_flight`` bounds each producer's unacknowledged messages."""

    def adjust_rate(self, rate: float, *, keep_lag: bool) -> None:
        """Change the total rate of a running load (split over producer workers as
        ``start_load`` splits it); ``keep_lag``: see
        :meth:`loadgen.engine.rate.Schedule.continued`."""

    def stop_load(self, flush_timeout_s: float) -> int:
        """Stop sending, wait for in-flight acknowledgements; return how many never came."""

    def loop_error(self) -> BaseException | None:
        """Why a producer loop stopped on its own, if one did."""

    def sent_so_far(self) -> int: ...

    def received_so_far(self) -> int: ...

    def progress(self) -> Progress:
        """Acknowledged, received and failed so far (publish errors counted since the start)."""

    def received_catch_up_so_far(self) -> int:
        """Of :meth:`received_so_far`, what the catch-up subscriptions received."""

    def snapshot(self, start_ms: int, end_ms: int, *, warmup: bool) -> IntervalStats: ...

    def accounting(self, *, ask_broker: bool = False) -> list[dict[str, Any]]:
        """Every worker's received and acknowledged id ranges
        (:meth:`loadgen.engine.accounting.Ledger.to_json`), for
        :func:`loadgen.engine.accounting.account`;
        with ``ask_broker``, also what the broker holds unread (:mod:`loadgen.engine.unread`)."""

    @property
    def worker_intervals(self) -> dict[str, list[IntervalStats]]:
        """Each worker's own snapshots when the run is split over workers (what was merged);
        empty for the in-process worker, whose snapshots are the run's."""

    def placement(self) -> dict[str, Any]:
        """Where the run ran, for the result's ``run`` block: worker ids, clock offsets..."""

    def topic_scaling(self) -> list[dict[str, Any]]:
        """After :meth:`close`: how the broker re-partitioned the run's topics
        (:meth:`loadgen.driver_api.TopicScaling.to_json` each), where the driver can say."""

    def close(self, *, delete_topics: bool) -> None:
        """Stop everything; never raises, so a result is never masked."""
