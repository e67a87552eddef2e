"""A worker's side of a run: one driver and one :class:`LocalWorker`, driven by requests.

Each method is one request of the coordinator, run on the server's single executor thread, so
requests never interleave inside the worker. A new driver replaces any left by a coordinator
that went away mid-run (after closing it), so a worker serves run after run.
"""

from __future__ import annotations

import logging
from typing import Any

from loadgen.base.errors import LoadgenError
from loadgen.driver_api import open_driver
from loadgen.engine.local_worker import LocalWorker
from loadgen.formats import worker_protocol as wire
from loadgen.metrics.board import MetricsBoard

log = logging.getLogger("loadgen.distributed.worker")


class NoRun(LoadgenError):
    """A request that needs a driver came before ``/driver``."""

    exit_code = 2

    def __init__(self) -> None:
        super().__init__("no driver is initialised on this worker; POST /driver first")


class WorkerService:
    """``board`` shows this worker's own figures (:mod:`loadgen.metrics`): its snapshots as the
    coordinator takes them, and the phase its requests put it in."""

    def __init__(self, board: MetricsBoard | None = None) -> None:
        self._worker: LocalWorker | None = None
        self.board = board or MetricsBoard(role="worker")

    @property
    def worker(self) -> LocalWorker:
        if self._worker is None:
            raise NoRun()
        return self._worker

    @property
    def busy(self) -> bool:
        return self._worker is not None

    def open(self, body: wire.DriverBody) -> None:
        if self._worker is not None:
            log.warning("a previous run was not closed; closing it before the new one")
            self.close(wire.CloseBody(delete_topics=False))
        spec = body.spec()
        self.board.start_run(driver=spec.name)
        worker = None
        try:
            worker = LocalWorker(open_driver(spec))
            worker.check_reachable(body.reachable_timeout_s)
        except BaseException:
            if worker is not None:
                worker.close(delete_topics=False)
            self.board.end_run()
            raise
        self._worker = worker

    def create_topics(self, body: wire.TopicsBody) -> dict[str, Any]:
        return {"topics": self.worker.create_topics(body.count, body.partitions, tuple(body.names))}

    def adopt_topics(self, body: wire.AdoptBody) -> None:
        self.worker.adopt_topics(body.names, body.partitions)

    def create_consumers(self, body: wire.ConsumersBody) -> None:
        self.worker.create_consumers(body.subscriptions, set(body.catch_up), body.delays)

    def pause_catch_up(self, body: wire.PauseBody) -> None:
        self.worker.pause_catch_up(body.paused)

    def create_producers(self, body: wire.ProducersBody) -> None:
        self.worker.create_producers(body.topics, body.first_number)

    def correct_clocks(self, body: wire.ClockBody) -> None:
        self.worker.correct_clocks(body.table())

    def send_probes(self, body: wire.TimeoutBody) -> None:
        self.worker.send_probes(body.timeout_s)

    def end_probe(self) -> dict[str, Any]:
        self.worker.end_probe()
        return {"totals": wire.totals_to_json(self.worker.totals)}

    def start_load(self, body: wire.LoadBody) -> None:
        self.worker.start_load(
            body.rate, body.payload_bytes(), body.key_distributor, body.max_in_flight
        )
        self.board.on_phase("load")

    def adjust_rate(self, body: wire.RateBody) -> None:
        self.worker.adjust_rate(body.rate, keep_lag=body.keep_lag)

    def stop_load(self, body: wire.TimeoutBody) -> dict[str, Any]:
        self.board.on_phase("drain")
        return {"pending": self.worker.stop_load(body.timeout_s)}

    def snapshot(self, body: wire.SnapshotBody) -> dict[str, Any]:
        stats = self.worker.snapshot(body.start_ms, body.end_ms, warmup=body.warmup)
        self.board.on_interval(stats)
        return {
            "stats": wire.stats_to_json(stats),
            "totals": wire.totals_to_json(self.worker.totals),
        }

    def accounting(self, body: wire.AccountingBody) -> dict[str, Any]:
        [ledger] = self.worker.accounting(ask_broker=body.ask_broker)
        return {"ledger": ledger}

    def counters(self) -> dict[str, Any]:
        """Cheap, and read on the event loop: plain integer reads, no executor hop."""
        worker = self.worker
        error = worker.loop_error()
        progress = worker.progress()
        return {
            "sentSoFar": progress.acked,
            "receivedSoFar": progress.received,
            "receivedCatchUpSoFar": worker.received_catch_up_so_far(),
            "errorsSoFar": progress.errors,
            "loopError": None if error is None else repr(error),
        }

    def close(self, body: wire.CloseBody) -> dict[str, Any]:
        """Closes the worker; answers how the topics it created scaled (``topicScaling``)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return {}
        self.board.on_phase("teardown")
        try:
            worker.close(delete_topics=body.delete_topics)
        finally:
            self.board.end_run()
        return {"topicScaling": worker.topic_scaling()}
