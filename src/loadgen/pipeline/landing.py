"""The producer side of the Spark pipeline: interval snapshots as JSON lines in a landing directory.

Each stats interval of a worker becomes one file holding one line per metric; the end of a
worker's run becomes one file with an ``end`` line per metric, so the Spark job finalises the
run's last intervals as soon as they are in. A run whose worker died (``kill -9``, a lost host)
never gets its end marker; :func:`close_run` lands a ``close`` marker that finalises it as
incomplete. Files appear by atomic rename from a name
starting with ``.``, which the ingest job never lists, so it never reads half a file.

The record layout is :data:`loadgen.pipeline.tasks.records.RECORD_FIELDS`; the job's parse and
merge tasks (:mod:`loadgen.pipeline.tasks`) read these same names.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadgen.base import hdr
from loadgen.base.files import file_safe, write_text_atomic
from loadgen.base.writable import check_outputs
from loadgen.engine.stats import METRICS, IntervalStats
from loadgen.pipeline.tasks.records import CLOSE, COUNTERS, END, INTERVAL

log = logging.getLogger("loadgen.pipeline")


@dataclass(frozen=True)
class RunIdentity:
    """Who is writing: the run, this worker among ``workers``, and what the run measures.

    ``meta`` is the run's configuration (workload, driver config without secrets, versions,
    host), stored as JSON text on every line so the tables can be queried by any setting.
    """

    run_id: str
    worker_id: str
    workers: int
    workload: str
    driver: str
    driver_kind: str
    meta: dict[str, Any]


class LandingWriter:
    """Writes one worker's intervals and end marker into a landing directory."""

    def __init__(self, directory: Path, identity: RunIdentity) -> None:
        self.directory = directory
        self.identity = identity
        self.written = 0
        self._common = {
            "run_id": identity.run_id,
            "worker_id": identity.worker_id,
            "workers": identity.workers,
            "workload": identity.workload,
            "driver": identity.driver,
            "driver_kind": identity.driver_kind,
            "meta": json.dumps(identity.meta, sort_keys=True, default=str),
        }

    def interval(self, stats: IntervalStats) -> Path:
        """Land the next interval: one line per metric, empty histograms included."""
        seq = self.written
        self.written += 1  # a landing that fails still takes its number: seq is the run's index
        counters = {name: getattr(stats, name) for name in COUNTERS}
        lines = []
        for metric in METRICS:
            histogram = stats.histogram(metric)
            lines.append(
                {
                    "kind": INTERVAL,
                    **self._common,
                    "seq": seq,
                    "interval_start": stats.start_ms,
                    "interval_end": stats.end_ms,
                    "warmup": stats.warmup,
                    "metric": metric,
                    "count": histogram.total,
                    "hist": hdr.encode(histogram),
                    **counters,
                    "emitted_at": time.time(),
                }
            )
        return self._land(f"{seq:06d}", lines)

    def end(
        self, *, incomplete: bool, stop_reason: str | None, faults: list[Any] | None = None
    ) -> Path:
        """Land the end marker: this worker wrote :attr:`written` intervals and will write none;
        ``faults``, the result's block, goes to the ``runs`` table as JSON text."""
        lines = [
            {
                "kind": END,
                **self._common,
                "seq": self.written,
                "metric": metric,
                "incomplete": incomplete,
                "stop_reason": stop_reason,
                "emitted_at": time.time(),
                **({"faults": json.dumps(faults)} if faults else {}),
            }
            for metric in METRICS
        ]
        return self._land("end", lines)

    def _land(self, suffix: str, lines: list[dict[str, Any]]) -> Path:
        stem = f"{self.identity.run_id}-{self.identity.worker_id}-{suffix}"
        return land(self.directory, stem, lines)


def land(directory: Path, stem: str, lines: list[dict[str, Any]]) -> Path:
    """Write ``lines`` as ``<directory>/<stem>.json`` by atomic rename."""
    path = directory / f"{file_safe(stem)}.json"
    write_text_atomic(path, "".join(json.dumps(line) + "\n" for line in lines))
    return path


def close_run(directory: Path, run_id: str, reason: str) -> Path:
    """Land a ``close`` marker: the job finalises ``run_id`` with what it has, as incomplete."""
    lines = [
        {"kind": CLOSE, "run_id": run_id, "metric": metric, "stop_reason": reason}
        for metric in METRICS
    ]
    return land(directory, f"{run_id}-close-{time.time_ns()}", lines)


class LandingFeed:
    """Lands a run's intervals one interval behind, and the rest and its end marker at the end.

    The newest interval is held back until the next one is taken, because the run's last
    interval is not final when it is taken: the drain after the measurement folds late acks and
    deliveries into it. Landing the result's own final list at the end makes the tables equal
    the result file exactly, at the cost of one stats interval of delay in a live job.

    A landing that fails (disk full, directory removed) is logged and the run goes on: the
    result file is the run's record, the pipeline a copy of it.
    """

    def __init__(self, writer: LandingWriter) -> None:
        self.writer = writer
        self.failures = 0
        self._held: IntervalStats | None = None

    def on_phase(self, phase: str, seconds: float | None) -> None:
        """Phases are not landed (a :class:`~loadgen.engine.listeners.RunListener`)."""

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        """Land the interval before this one."""
        held, self._held = self._held, stats
        if held is not None:
            self._guarded(lambda: self.writer.interval(held))

    def end(
        self,
        intervals: Sequence[IntervalStats],
        *,
        incomplete: bool,
        stop_reason: str | None,
        faults: list[Any] | None = None,
    ) -> None:
        """Land the run's final ``intervals`` not landed yet, then the end marker."""
        self._held = None
        for stats in intervals[self.writer.written :]:
            self._guarded(lambda stats=stats: self.writer.interval(stats))
        self._guarded(
            lambda: self.writer.end(incomplete=incomplete, stop_reason=stop_reason, faults=faults)
        )

    def _guarded(self, write: Callable[[], Path]) -> None:
        try:
            write()
        except OSError as error:
            self.failures += 1
            log.warning("pipeline: could not land in %s: %s", self.writer.directory, error)


def open_landing(directory: Path, identity: RunIdentity) -> LandingFeed:
    """A feed into ``directory``, created if absent; an unusable one is a ConfigError (exit 2)."""
    check_outputs({"pipeline": directory})
    return LandingFeed(LandingWriter(directory, identity))
