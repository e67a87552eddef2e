"""Each micro-batch planned by the driver and computed by Spark's executors.

Per batch the driver only plans and commits; every landing line is handled in executor tasks:

1. **parse** (``mapInArrow``, :func:`~loadgen.pipeline.tasks.parse.parse_batches`): each of
   the batch's files (as :mod:`loadgen.pipeline.source` recorded them) → one row per line, or
   a problem row saying why not. The tasks read ``file:`` URIs themselves (a local or shared
   file system: Spark's file reader costs about a millisecond of JVM time per small file), each
   task a range of names (:func:`by_name_ranges`); on other file systems Spark's
   ``binaryFile`` reader hands them the bytes (:func:`read_files`);
2. **shuffle** by (run, metric), together with the previous batch's state rows
   (:mod:`loadgen.pipeline.state`);
3. **merge** (``mapInArrow``, :func:`~loadgen.pipeline.tasks.merge.merge_partition`): each
   group advanced from its state — histograms decoded, intervals merged across workers, Java-
   equal percentiles, the run's merged histogram — out as table rows and the new state (a
   group without lines passes its state through);
4. **write** with Spark's writer: ``OUT/<table>/day=<UTC day>/batch=<id>/``, each file sorted
   by run and metric (so Parquet's statistics let a query for one run skip the rest), then the
   new state. A re-run batch first deletes what its first attempt wrote.

The driver collects only the batch's row counts per table and its quarantine rows (file and
reason), so the job's throughput grows with executor cores, not with one driver
thread. Every landing file with a quarantined line is copied to ``OUT/_quarantined/batch=<id>/``
next to a ``.reason`` file. A file that was listed but is gone before it could be read, or is
empty, is a quarantine row too: from the task that read it, or, where Spark's reader skipped
it (gone before it was read; empty files), from the batch's record of its files.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from loadgen.pipeline import state
from loadgen.pipeline.hadoop_fs import HadoopFiles, file_name, join
from loadgen.pipeline.tables import BATCH, DAY, QUARANTINED, TABLES
from loadgen.pipeline.tasks.merge import merge_partition
from loadgen.pipeline.tasks.parse import EMPTY, VANISHED, parse_batches
from loadgen.pipeline.tasks.records import (
    OUTPUT_COLUMNS,
    PARSED_COLUMNS,
    SOURCE_FILE,
    STATE,
    STATE_COLUMNS,
    TABLE,
    ddl,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

log = logging.getLogger("loadgen.pipeline")

KEYS = ["run_id", "metric"]
TASKS_PER_CORE = 2
"""Parse tasks per executor core, each a range of the batch's files."""
DAY_SOURCE = {
    "intervals": "interval_start",
    "runs": "coalesce(run_start, run_end, CAST(merged_at * 1000 AS BIGINT))",
    "quarantine": "CAST(quarantined_at * 1000 AS BIGINT)",
}
"""What each table's ``day`` partition is the UTC day of, in epoch ms (Spark SQL)."""
SORTED_BY = {"intervals": [*KEYS, "seq"], "runs": KEYS, "quarantine": [SOURCE_FILE]}


def same_file(uri: str) -> tuple[str, str, str]:
    """A file URI in one form whichever way Spark wrote it (``file:/x`` in a DataFrame,
    ``file:///x`` in the batch's record, escaped or not)."""
    parsed = urlparse(uri)
    return parsed.scheme or "file", parsed.netloc, unquote(parsed.path)


def day_of(table: str) -> Column:
    from pyspark.sql import functions as F

    return F.date_format(F.timestamp_millis(F.expr(DAY_SOURCE[table])), "yyyy-MM-dd")


class BatchWriter:
    """Plans, runs and commits every micro-batch; keeps the totals for the job's last line."""

    def __init__(self, out: str, *, read_local_files: bool = True) -> None:
        """``read_local_files``: the tasks read ``file:`` URIs themselves (else Spark's
        reader, as for other file systems)."""
        self.out = out
        self.read_local_files = read_local_files
        self.totals = dict.fromkeys(TABLES, 0)

    def __call__(self, spark: SparkSession, batch_id: int, listed: list[str]) -> None:
        """Run batch ``batch_id`` on the files ``listed`` (URIs), recorded for it before."""
        from pyspark import StorageLevel

        files = HadoopFiles(spark)
        now = time.time()
        cores = spark.sparkContext.defaultParallelism
        files_read = spark.sparkContext.accumulator(0)
        local = self.read_local_files and bool(listed)
        local = local and all(uri.startswith("file:") for uri in listed)
        if local:  # the tasks read the files: Spark's reader costs ~1 ms of JVM a small file
            source = by_name_ranges(spark, listed, min(len(listed), cores * TASKS_PER_CORE))
        else:
            source = read_files(spark, files, listed).coalesce(cores * TASKS_PER_CORE)
        parsed = source.mapInArrow(
            partial(parse_batches, files_read=files_read), ddl(PARSED_COLUMNS)
        )
        previous = state.load(spark, files, self.out, batch_id)
        # read up to five times (the summary, three tables, the state): kept as Spark's column
        # batches; Python's MEMORY_AND_DISK is the serialized level, which would copy them
        # into bytes once and back out on every read
        merged = merge_plan(parsed, previous, now).persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            counts, problems = self.summary(merged)
            unread = [] if local else self._unread(parsed, listed, files, files_read.value, now)
            self._commit(merged, unread, counts, problems, batch_id, files)
            states = merged.where(f"{TABLE} = '{STATE}'").select(*(c for c, _ in STATE_COLUMNS))
            state.save(states, files, self.out, batch_id)
        finally:
            merged.unpersist()

    @staticmethod
    def summary(merged: DataFrame) -> tuple[dict[str, int], list[tuple[str, str]]]:
        """One job that runs the batch's tasks: rows per table, and each quarantined line's
        file and reason."""
        from pyspark.sql import functions as F

        quarantined = F.when(F.col(TABLE) == "quarantine", F.struct(SOURCE_FILE, "reason"))
        found = (
            merged.groupBy(TABLE)
            .agg(F.count("*").alias("rows"), F.collect_list(quarantined).alias("problems"))
            .collect()
        )
        counts = dict.fromkeys(TABLES, 0) | {row[TABLE]: row["rows"] for row in found}
        problems = [(p[SOURCE_FILE], p["reason"]) for row in found for p in row["problems"]]
        return counts, problems

    def _commit(
        self,
        merged: DataFrame,
        unread: list[dict[str, Any]],
        counts: dict[str, int],
        problems: list[tuple[str, str]],
        batch_id: int,
        files: HadoopFiles,
    ) -> None:
        """Write the batch's tables (replacing a first attempt's) and report them."""
        spark = merged.sparkSession
        counts["quarantine"] += len(unread)
        problems += [(row[SOURCE_FILE], row["reason"]) for row in unread]
        for table, columns in TABLES.items():
            rows = merged.where(f"{TABLE} = '{table}'").select(*(c for c, _ in columns))
            if table == "quarantine" and unread:
                rows = rows.unionByName(spark.createDataFrame(unread, ddl(columns)))
            self._write(rows, table, batch_id, files, empty=not counts[table])
            self.totals[table] += counts[table]
        counts = {table: counts[table] for table in TABLES}
        if any(counts.values()):
            log.info("batch %d: %s", batch_id, describe(counts))
        if problems:
            self._quarantine_files(problems, batch_id, files)

    def _write(
        self, rows: DataFrame, table: str, batch_id: int, files: HadoopFiles, *, empty: bool
    ) -> None:
        """``rows`` as ``OUT/<table>/day=*/batch=<id>``, after deleting what a first attempt of
        this batch wrote there (an attempt that wrote nothing left nothing to delete)."""
        from pyspark.sql import functions as F

        location = join(self.out, table)
        files.delete_matching(join(location, f"{DAY}=*", f"{BATCH}={batch_id}"))
        if empty:
            return
        (
            rows.withColumn(DAY, day_of(table))
            .withColumn(BATCH, F.lit(batch_id))
            .sortWithinPartitions(DAY, *SORTED_BY[table])
            .write.mode("append")
            .partitionBy(DAY, BATCH)
            .parquet(location)
        )

    @staticmethod
    def _unread(
        parsed: DataFrame, listed: list[str], files: HadoopFiles, read: int, now: float
    ) -> list[dict[str, Any]]:
        """Quarantine rows for the batch's files Spark's reader gave no rows for: gone, or
        empty. The parse tasks counted the files they were given (``read``): only when the
        batch's record lists more are the names compared (a second job) and the others looked at."""
        if len(listed) <= read:
            return []
        seen = {same_file(row[0]) for row in parsed.select(SOURCE_FILE).distinct().collect()}
        rows = []
        for uri in listed:
            if same_file(uri) in seen:
                continue
            size = files.size(uri)
            reason = VANISHED if size is None else EMPTY if size == 0 else None
            if reason:
                rows.append({SOURCE_FILE: uri, "reason": reason, "quarantined_at": now})
        return rows

    def _quarantine_files(
        self, problems: list[tuple[str, str]], batch_id: int, files: HadoopFiles
    ) -> None:
        """Log each quarantined line; copy each file it came from aside with its reasons."""
        reasons: dict[str, list[str]] = defaultdict(list)
        for uri, reason in problems:
            log.warning("quarantined a line of %s: %s", uri, reason)
            reasons[str(uri)].append(str(reason))
        folder = join(self.out, QUARANTINED, f"batch={batch_id}")
        for uri, why in reasons.items():
            name = file_name(uri)
            copied = "copied here"
            try:
                files.copy(uri, join(folder, name))
            except OSError as error:
                copied = f"not copied: {error.args[0].splitlines()[0] if error.args else error}"
            files.write_text(join(folder, f"{name}.reason"), "\n".join([uri, copied, *why]) + "\n")


def read_files(spark: SparkSession, files: HadoopFiles, uris: list[str]) -> DataFrame:
    """The files' (path, content) by Spark's ``binaryFile`` reader (any file system). It fails
    on a path that is not there, so only those still there are given (one that goes after
    this look is skipped: ``ignoreMissingFiles``); the batch quarantines the rest."""
    present = [uri for uri in uris if files.exists(uri)]
    if not present:
        return spark.createDataFrame([], "path STRING, content BINARY")
    reader = spark.read.format("binaryFile").option("ignoreMissingFiles", "true")
    return reader.load(present).select("path", "content")


def by_name_ranges(spark: SparkSession, uris: list[str], tasks: int) -> DataFrame:
    """``uris`` as ``tasks`` partitions of consecutive names: a run's files (named
    ``<run>-<worker>-<seq>``) mostly share a task, which then hands on the run's ``meta`` once
    per metric (:class:`~loadgen.pipeline.tasks.parse.MetaOnce`), not once per task."""
    files = spark.createDataFrame([(uri,) for uri in uris], "path STRING")
    return files.repartitionByRange(tasks, "path")


def merge_plan(parsed: DataFrame, previous: DataFrame, now: float) -> DataFrame:
    """The parsed lines and the previous state, shuffled by (run, metric) into the merge."""
    cores = parsed.sparkSession.sparkContext.defaultParallelism
    return (
        parsed.unionByName(previous, True)
        .repartition(max(cores, 1), *KEYS)
        .mapInArrow(partial(merge_partition, now=now), ddl(OUTPUT_COLUMNS))
    )


WARM_UP_FILE = "file:///nonexistent/loadgen-pipeline-warm-up.json"


def warm_up(spark: SparkSession) -> None:
    """Run a batch's tasks once on a file that is not there (it only yields a quarantine row,
    not written anywhere), so the live job's first real batch finds the Python workers started
    and the JVM's shuffle and Arrow paths compiled: its rows then lag like every other batch's."""
    lines = spark.createDataFrame([(WARM_UP_FILE,)], "path STRING")
    parsed = lines.mapInArrow(parse_batches, ddl(PARSED_COLUMNS))
    BatchWriter.summary(merge_plan(parsed, spark.createDataFrame([], ddl(STATE_COLUMNS)), 0.0))


def describe(counts: dict[str, int]) -> str:
    return (
        f"{counts.get('intervals', 0)} interval rows, {counts.get('runs', 0)} run rows, "
        f"{counts.get('quarantine', 0)} lines quarantined"
    )
