"""``loadgen pipeline ingest``: landing files → Structured Streaming → Parquet tables, exactly once.

The query: the ``binaryFile`` source (each new landing file's bytes, read by the executors)
into :class:`loadgen.pipeline.sink.BatchWriter`, which has the executors parse the lines
(:mod:`loadgen.pipeline.tasks.parse`: a defective line or file becomes a problem row, never an
exception), merge them per (run, metric) (:mod:`loadgen.pipeline.tasks.merge`) and write
``OUT/<table>/day=<day>/batch=<id>``. The tasks' code ships with the job
(:mod:`loadgen.pipeline.ship`).

Exactly once: the checkpoint (``OUT/_checkpoint``) records which files each batch read, and
``OUT/_state`` the merge state after each batch (:mod:`loadgen.pipeline.state`); a job killed
mid-batch re-runs that batch from the previous batch's state on restart and replaces the
batch's files, so no interval is lost or written twice. Since no input can fail a batch, a
restart never replays into the same failure.
Processed landing files are moved to ``OUT/_landed`` (``--keep-landing`` leaves them) so the
source's directory listing stays short in long sessions.
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

from loadgen.errors import LoadgenError
from loadgen.pipeline.hadoop_fs import join
from loadgen.pipeline.ship import ship_tasks
from loadgen.pipeline.sink import BatchWriter, describe, warm_up
from loadgen.pipeline.spark import start_session
from loadgen.pipeline.tables import CHECKPOINT, LANDED

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("loadgen.pipeline")

BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"
"""The ``binaryFile`` source's fixed columns (a streaming source must be told its schema)."""
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


def start_query(spark: SparkSession, settings: IngestSettings, sink: BatchWriter) -> StreamingQuery:
    """Start the query: each micro-batch's new landing files (path, bytes) → ``sink``; the
    executors' code goes with it."""
    ship_tasks(spark)
    reader = (
        spark.readStream.format("binaryFile")
        .schema(BINARY_FILE_SCHEMA)
        .option("ignoreMissingFiles", "true")
    )
    if settings.max_files:
        reader = reader.option("maxFilesPerTrigger", settings.max_files)
    if not settings.keep_landing:
        reader = reader.option("cleanSource", "archive").option(
            "sourceArchiveDir", join(settings.out, LANDED)
        )
    files = reader.load(settings.landing).select("path", "content")
    writer = (
        files.writeStream.foreachBatch(sink)
        .option("checkpointLocation", join(settings.out, CHECKPOINT))
        .outputMode("append")
    )
    if settings.once:
        return writer.trigger(availableNow=True).start()
    return writer.trigger(processingTime=f"{settings.trigger_s} seconds").start()


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


def ingest(spark: SparkSession, settings: IngestSettings, stop: threading.Event) -> dict[str, int]:
    """Run the job on ``spark`` until drained (``once``) or ``stop`` is set; rows per table."""
    from pyspark.errors import StreamingQueryException

    batches = BatchWriter(settings.out)
    try:
        if not settings.once:
            started = time.perf_counter()
            ship_tasks(spark)
            warm_up(spark)
            log.info("Spark's Python workers started in %.1f s", time.perf_counter() - started)
        query = start_query(spark, settings, batches)
        if not settings.once:
            log.info(
                "watching %s every %gs; tables in %s; Ctrl-C stops (a restart resumes)",
                settings.landing,
                settings.trigger_s,
                settings.out,
            )
        while not stop.is_set() and not query.awaitTermination(STOP_POLL_S):
            pass
        if query.isActive:
            log.info("stopping: the batch under way finishes or is re-run on restart")
            query.stop()
    except StreamingQueryException as error:
        summary = str(error).strip().splitlines()[0]
        raise LoadgenError(f"the ingest job failed: {summary}") from None
    finally:
        log.info("ingested %s into %s", describe(batches.totals), settings.out)
    return batches.totals
