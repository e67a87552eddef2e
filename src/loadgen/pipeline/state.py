"""The merge's state between micro-batches: a table Spark writes per batch, ``_state/batch=<id>``.

Exactly once without a driver-local file: each batch writes its tables, then the state of every
(run, metric) group after it (:data:`~loadgen.pipeline.tasks.records.STATE_COLUMNS`; groups the
batch did not touch are carried over by Spark, untouched). A batch starts from the state of the
highest *complete* batch below its own (one Spark finished writing: its ``_SUCCESS`` marker),
so a batch re-run after a crash (the job re-runs the last unfinished one) starts from the same
state as its first attempt and rewrites the same rows, whether or not that attempt got as far
as writing its own state. Only the last :data:`KEPT` are kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.pipeline.hadoop_fs import HadoopFiles, join
from loadgen.pipeline.tables import STATE_TABLE
from loadgen.pipeline.tasks.records import STATE_COLUMNS, ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PREFIX = "batch="
SUCCESS = "_SUCCESS"
KEPT = 2


def _batches(files: HadoopFiles, out: str) -> list[int]:
    suffixes = [name[len(PREFIX) :] for name in files.names(join(out, STATE_TABLE))]
    return sorted(int(suffix) for suffix in suffixes if suffix.isdigit())


def _location(out: str, batch_id: int) -> str:
    return join(out, STATE_TABLE, f"{PREFIX}{batch_id}")


def load(spark: SparkSession, files: HadoopFiles, out: str, batch_id: int) -> DataFrame:
    """The groups' states after the highest complete batch below ``batch_id`` (none before the
    first)."""
    for number in reversed(_batches(files, out)):
        if number < batch_id and files.exists(join(_location(out, number), SUCCESS)):
            return spark.read.schema(ddl(STATE_COLUMNS)).parquet(_location(out, number))
    return spark.createDataFrame([], ddl(STATE_COLUMNS))


def save(states: DataFrame, files: HadoopFiles, out: str, batch_id: int) -> None:
    """The groups' states after ``batch_id``; the states of batches before the previous go."""
    states.write.mode("overwrite").parquet(_location(out, batch_id))
    for number in _batches(files, out):
        if number <= batch_id - KEPT:
            files.delete_matching(_location(out, number))
