"""The figures an endpoint serves: updated at interval ends, read by any number of scrapes.

Writers (the scenario's interval tick, a worker's request thread) build a new immutable
:class:`~.families.View` and its families under a lock and swap them in; a scrape only reads
the current tuple, so it never waits for a writer and never sees half an update.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from loadgen.engine.stats import IntervalStats
from loadgen.metrics.families import View, families


class MetricsBoard(Collector):
    """The current :class:`View` of a coordinator or a worker, as a prometheus_client Collector.

    ``labels`` (``role``, ``worker``) stay for every run; :meth:`start_run` adds a run's own.
    """

    def __init__(self, **labels: str) -> None:
        self._lock = threading.Lock()
        self._fixed = dict(labels)
        self._view = View(labels=self._fixed)
        self._families: tuple[Metric, ...] = tuple(families(self._view))

    @property
    def view(self) -> View:
        return self._view

    def collect(self) -> Iterable[Metric]:
        return self._families

    def _update(self, change: Callable[[View], View]) -> None:
        with self._lock:
            view = change(self._view)
            built = tuple(families(view))
            self._view, self._families = view, built

    def start_run(self, **labels: str) -> None:
        """A new run: totals and interval figures start over; ``labels`` (``run_id``,
        ``workload``, ``driver``) mark its samples."""
        self._update(lambda _: View(labels={**self._fixed, **labels}, active=True, phase="setup"))

    def on_phase(self, name: str, seconds: float | None = None) -> None:
        """A phase began (the board is a :class:`~loadgen.engine.listeners.RunListener`)."""
        self._update(lambda view: replace(view, phase=name))

    def on_interval(self, stats: IntervalStats, backlog: int | None = None) -> None:
        """One more completed interval."""
        self._update(
            lambda view: replace(
                view,
                totals=view.totals.plus(stats),
                interval=stats,
                index=view.index + 1,
                backlog=backlog,
            )
        )

    def end_run(self) -> None:
        """The run ended; its last figures stay until the next one starts."""
        self._update(lambda view: replace(view, active=False, phase="idle"))
