"""``loadgen pipeline ingest``: landing files → micro-batches on Spark → Parquet tables, once.

The job's own loop, Structured Streaming's model without its file source (which cost ~2 s of
driver time per 6,200-file batch, :mod:`loadgen.pipeline.source`): each micro-batch's new
landing files are recorded in ``OUT/_checkpoint`` before
:class:`loadgen.pipeline.sink.BatchWriter` has the executors parse the lines
(:mod:`loadgen.pipeline.tasks.parse`: a defective line or file becomes a problem row, never an
exception), merge them per (run, metric) (:mod:`loadgen.pipeline.tasks.merge`) and write
``OUT/<table>/day=<day>/batch=<id>``; then the batch is marked done. The tasks' code ships with
the job (:mod:`loadgen.pipeline.ship`). ``--once`` takes the files there at its start (in steps
of ``--max-files``), as Spark's ``availableNow`` trigger does; the live job looks every
``--trigger``, as a processing-time trigger does.

Exactly once: ``OUT/_state`` holds the merge state after each batch
(:mod:`loadgen.pipeline.state`); a job killed mid-batch runs that batch again on restart, on
the same files, from the previous batch's state, replacing the batch's files, so no interval is
lost or written twice. Since no input can fail a batch, a restart never replays into the same
failure. Processed landing files move to ``OUT/_landed`` (``--keep-landing`` leaves them), so
the listing stays short in long sessions.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loadgen.base.errors import LoadgenError
from loadgen.pipeline.hadoop_fs import HadoopFiles, join
from loadgen.pipeline.ship import ship_tasks
from loadgen.pipeline.sink import BatchWriter, describe, warm_up
from loadgen.pipeline.source import LandingSource
from loadgen.pipeline.spark import executor_python_problem, start_session
from loadgen.pipeline.tables import CHECKPOINT, LANDED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("loadgen.pipeline")

STOP_POLL_S = 0.5


@dataclass(frozen=True)
class IngestSettings:
    """How the job runs: where from and to, on which master, how often, and for how long.

    ``landing`` and ``out`` are local paths or URIs of any file system Spark reads and writes.
    ``max_files``: at most this many landing files per micro-batch (a long backlog in bounded
    steps); all new files by default."""

    landing: str
    out: str
    master: str
    once: bool = False
    trigger_s: float = 5.0
    keep_landing: bool = False
    max_files: int | None = None
    conf: tuple[tuple[str, str], ...] = ()


def batches(
    source: LandingSource, settings: IngestSettings, stop: threading.Event
) -> Iterator[tuple[int, list[str]]]:
    """The job's micro-batches as (id, file URIs), each recorded before it is handed out: a
    batch cut short by the last stop first; then with ``once`` the files there now, else the
    new files every trigger (a batch that overruns the trigger is followed at once)."""
    unfinished = source.unfinished()
    if unfinished:
        yield unfinished
    waiting = source.new_files() if settings.once else []
    next_look = time.monotonic()
    while not stop.is_set():
        if not settings.once:
            if stop.wait(max(0.0, next_look - time.monotonic())):
                return
            next_look = time.monotonic() + settings.trigger_s
            waiting = source.new_files()
        if not waiting:
            if settings.once:
                return
            continue
        taken = waiting[: settings.max_files or len(waiting)]
        waiting = waiting[len(taken) :]
        yield source.start(taken), taken


@contextlib.contextmanager
def _stop_requests() -> Iterator[threading.Event]:
    """Ctrl-C and SIGTERM set an event instead of raising inside a py4j call (PySpark's own
    SIGINT handler does that, and the gateway answers with a reentrancy traceback)."""
    requested = threading.Event()

    def request(signum: int, frame: object) -> None:
        requested.set()

    previous = {sig: signal.signal(sig, request) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_ingest(settings: IngestSettings) -> None:
    """Run the job on its own Spark session until drained (``once``) or until stopped."""
    spark = start_session(settings.master, "loadgen pipeline ingest", dict(settings.conf))
    try:
        with _stop_requests() as stop:
            ingest(spark, settings, stop)
    finally:
        spark.stop()


@contextlib.contextmanager
def _jobs_cancelled_on(stop: threading.Event, spark: SparkSession) -> Iterator[None]:
    """Once ``stop`` is set, the Spark jobs of the batch under way are cancelled (the batch
    runs again on restart) instead of waited for: a backfill's batch can take minutes. Every
    poll, since a batch is several jobs and the stop may come between two."""
    finished = threading.Event()

    def watch() -> None:
        while not finished.wait(STOP_POLL_S):
            if stop.is_set():
                spark.sparkContext.cancelAllJobs()

    watcher = threading.Thread(target=watch, name="loadgen-ingest-stop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()


def ingest(
    spark: SparkSession,
    settings: IngestSettings,
    stop: threading.Event,
    writer: BatchWriter | None = None,
) -> dict[str, int]:
    """Run the job on ``spark`` until drained (``once``) or ``stop`` is set; rows per table.
    ``writer`` runs each batch (a :class:`BatchWriter` on ``settings.out`` by default)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    writer = writer or BatchWriter(settings.out)
    landed = None if settings.keep_landing else join(settings.out, LANDED)
    checkpoint = join(settings.out, CHECKPOINT)
    source = LandingSource(settings.landing, checkpoint, HadoopFiles(spark), landed=landed)
    batch_id = None
    try:
        with _jobs_cancelled_on(stop, spark):
            ship_tasks(spark)
            if not settings.once:
                started = time.perf_counter()
                warm_up(spark)
                log.info("Spark's Python workers started in %.1f s", time.perf_counter() - started)
                log.info(
                    "watching %s every %gs; tables in %s; Ctrl-C stops (a restart resumes)",
                    settings.landing,
                    settings.trigger_s,
                    settings.out,
                )
            for batch_id, uris in batches(source, settings, stop):
                writer(spark, batch_id, uris)
                source.finish(batch_id, uris)
    except (PySparkException, Py4JError) as error:
        where = "" if batch_id is None else f" in batch {batch_id}"
        if not stop.is_set():
            text = str(error)
            summary = executor_python_problem(text, spark.sparkContext.pythonExec)
            raise LoadgenError(
                f"the ingest job failed{where}: {summary or text.strip().splitlines()[0]}"
            ) from None
        if batch_id is not None:
            log.info("stopped during batch %d: it runs again on restart", batch_id)
    finally:
        log.info("ingested %s into %s", describe(writer.totals), settings.out)
    return writer.totals
