"""``loadgen pipeline query``: Spark SQL over the pipeline's tables, and two ready-made reports.

The tables are registered as views named ``intervals``, ``runs`` and ``quarantine`` (an absent
one is an empty view with its schema, so a query never fails for want of a run). Latencies are
µs; the reports show ms.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadgen.base.errors import ConfigError
from loadgen.pipeline.hadoop_fs import HadoopFiles, is_uri, join
from loadgen.pipeline.tables import CHECKPOINT, TABLES
from loadgen.pipeline.tasks.records import ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_LATENCY_MS = """
  round(p50 / 1000, 3) AS p50_ms, round(p99 / 1000, 3) AS p99_ms,
  round(p999 / 1000, 3) AS p999_ms, round(max / 1000, 3) AS max_ms"""

REPORTS = {
    "runs": f"""
SELECT run_id, metric, workload, driver, driver_kind,
  get_json_object(meta, '$.workload.messageSize') AS message_size,
  get_json_object(meta, '$.workload.topics') AS topics,
  get_json_object(meta, '$.workload.partitionsPerTopic') AS partitions,
  get_json_object(meta, '$.workload.producerRate') AS target_rate,
  round(publish_rate, 1) AS publish_rate, round(consume_rate, 1) AS consume_rate,
  count, {_LATENCY_MS}, complete
FROM runs WHERE metric = :metric ORDER BY run_start, run_id""",
    "timeline": f"""
SELECT seq, metric, timestamp_millis(interval_start) AS start, warmup, workers_reported, complete,
  round(sent * 1000 / greatest(interval_end - interval_start, 1), 1) AS publish_rate,
  round(received * 1000 / greatest(interval_end - interval_start, 1), 1) AS consume_rate,
  count, {_LATENCY_MS}
FROM intervals WHERE run_id = :run AND metric = :metric ORDER BY seq""",
}
"""Ready reports: ``runs`` compares every finished run (one metric), ``timeline`` one run's
intervals. Each takes the named parameters shown, and names its metric in a column."""


def check_tables(tables: str) -> None:
    """Refuse a local TABLES path that no ingest wrote to, before paying for a Spark start (a
    URI of another file system is checked by Spark when it reads)."""
    if not is_uri(tables) and not (Path(tables) / CHECKPOINT).is_dir():
        raise ConfigError(
            "no pipeline tables here",
            path="TABLES",
            value=str(tables),
            allowed="the --out directory of `loadgen pipeline ingest`",
        )


def register_tables(spark: SparkSession, tables: str) -> None:
    """Make ``intervals``, ``runs`` and ``quarantine`` queryable by name (with their partition
    columns ``day`` and ``batch``: ``WHERE day >= ...`` reads only those days' files)."""
    files = HadoopFiles(spark)
    for name, columns in TABLES.items():
        location = join(tables, name)
        if files.exists(location):
            frame = spark.read.parquet(location)
        else:
            frame = spark.createDataFrame([], ddl(columns))
        frame.createOrReplaceTempView(name)


def report_sql(report: str, run_id: str | None, metric: str) -> tuple[str, dict[str, Any]]:
    """The SQL of a ready report and its parameters; a timeline without a run is a ConfigError."""
    if report == "timeline" and not run_id:
        raise ConfigError(
            "the timeline report needs a run", path="--run", value=None, allowed="a run_id"
        )
    args: dict[str, Any] = {"metric": metric}
    if report == "timeline":
        args["run"] = run_id
    return REPORTS[report], args


def run_sql(spark: SparkSession, sql: str, args: Mapping[str, Any] | None = None) -> DataFrame:
    """``sql`` on the registered views; Spark's own message for a bad query, as a ConfigError."""
    from pyspark.errors import PySparkException

    try:
        return spark.sql(sql, args=dict(args) if args else None)
    except PySparkException as error:
        first_line = str(error).strip().splitlines()[0]
        raise ConfigError(
            f"Spark rejected the query: {first_line}", path="SQL", value=sql
        ) from None
