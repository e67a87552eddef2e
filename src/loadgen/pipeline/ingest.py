"""``loadgen pipeline ingest``: landing files → Structured Streaming → Parquet tables, exactly once.

The query: the file source (explicit schema, permissive, each line's file name kept) grouped by
(run, metric) into :func:`loadgen.pipeline.merge.advance` with Spark-managed state, then each
micro-batch written by ``foreachBatch`` to ``OUT/<table>/batch=<id>`` in overwrite mode.

Exactly once: the checkpoint (``OUT/_checkpoint``) records which files each batch read and the
merge state after it; a job killed mid-batch re-runs that batch from the previous state on
restart and overwrites the batch's directory, so no interval is lost or written twice.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadgen.errors import LoadgenError
from loadgen.pipeline.merge import RunState, Step, advance
from loadgen.pipeline.spark import start_session
from loadgen.pipeline.tables import (
    CHECKPOINT,
    CORRUPT_RECORD,
    LANDED,
    LANDING_SCHEMA,
    MERGED_COLUMNS,
    TABLE_COLUMN,
    TABLES,
    ddl,
)

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery
    from pyspark.sql.streaming.state import GroupState

log = logging.getLogger("loadgen.pipeline")

STATE_SCHEMA = "state STRING"
STOP_POLL_S = 0.5


@dataclass(frozen=True)
class IngestSettings:
    """How the job runs: where from and to, on which master, how often, and for how long."""

    landing: Path
    out: Path
    master: str
    once: bool = False
    trigger_s: float = 5.0
    keep_landing: bool = False
    conf: tuple[tuple[str, str], ...] = ()


def _frame(step: Step) -> pd.DataFrame:
    """The step's rows as one pandas frame in the merged schema (None stays null in any type)."""
    import pandas as pd

    rows = [{TABLE_COLUMN: table, **row} for table in TABLES for row in getattr(step, table)]
    return pd.DataFrame(
        {
            name: pd.Series([row.get(name) for row in rows], dtype=object)
            for name, _ in MERGED_COLUMNS
        }
    )


def merge_group(
    key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
) -> Iterator[pd.DataFrame]:
    """One (run, metric) group of one micro-batch through the merge, its state kept by Spark."""
    run_id, metric = key
    previous = RunState.loads(state.get[0]) if state.exists else None
    rows = [row for frame in frames for row in frame.to_dict("records")]
    step = advance(run_id, metric, previous, rows, time.time())
    if step.state is not None:
        state.update((step.state.dumps(),))
    yield _frame(step)


class BatchWriter:
    """``foreachBatch``: each micro-batch's rows to ``OUT/<table>/batch=<id>``, overwritten.

    Overwriting makes a re-run batch (after a crash) replace its first attempt, never add to it.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.totals = dict.fromkeys(TABLES, 0)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        batch.persist()  # three writes below; the stateful merge must run once, not three times
        try:
            counts = {
                row[TABLE_COLUMN]: row["count"]
                for row in batch.groupBy(TABLE_COLUMN).count().collect()
            }
            for table, columns in TABLES.items():
                if counts.get(table):
                    rows = batch.where(batch[TABLE_COLUMN] == table).select([c for c, _ in columns])
                    rows.write.mode("overwrite").parquet(
                        str(self.out / table / f"batch={batch_id}")
                    )
                    self.totals[table] += counts[table]
            if counts:
                log.info("batch %d: %s", batch_id, describe(counts))
            if counts.get("quarantine"):
                for row in batch.where(batch[TABLE_COLUMN] == "quarantine").collect():
                    log.warning("quarantined a line of %s: %s", row["source_file"], row["reason"])
        finally:
            batch.unpersist()


def describe(counts: dict[str, int]) -> str:
    return (
        f"{counts.get('intervals', 0)} interval rows, {counts.get('runs', 0)} run rows, "
        f"{counts.get('quarantine', 0)} lines quarantined"
    )


def _stream(spark: SparkSession, settings: IngestSettings, batches: BatchWriter) -> StreamingQuery:
    """Start the query: landing lines → merge per (run, metric) → ``batches``."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    reader = (
        spark.readStream.schema(LANDING_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
    )
    if not settings.keep_landing:
        reader = reader.option("cleanSource", "archive").option(
            "sourceArchiveDir", str(settings.out / LANDED)
        )
    lines = reader.json(str(settings.landing)).withColumn(
        "source_file", F.col("_metadata.file_path")
    )
    merged = lines.groupBy("run_id", "metric").applyInPandasWithState(
        merge_group, ddl(MERGED_COLUMNS), STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout
    )
    writer = (
        merged.writeStream.foreachBatch(batches)
        .option("checkpointLocation", str(settings.out / CHECKPOINT))
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
    """Run the job until the landing directory is drained (``once``) or until stopped."""
    from pyspark.errors import StreamingQueryException

    settings.landing.mkdir(parents=True, exist_ok=True)
    spark = start_session(settings.master, "loadgen pipeline ingest", dict(settings.conf))
    batches = BatchWriter(settings.out)
    try:
        with _stop_requests() as stop:
            query = _stream(spark, settings, batches)
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
        spark.stop()
        log.info("ingested %s into %s", describe(batches.totals), settings.out)
