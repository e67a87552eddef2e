"""The pipeline's schemas: landing lines in; ``intervals``, ``runs`` and ``quarantine`` out.

Spark DDL strings (no pyspark import), so the CLI can show them and the tests can check the
merge's rows against them without starting Spark. Latencies are µs, Java-equal percentiles;
``hist`` is the merged HdrHistogram (V2, base64) so later queries can merge again exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loadgen.pipeline.landing import COUNTERS

if TYPE_CHECKING:
    import pyarrow as pa

LANDING_TYPES = {
    "workers": "INT",
    "seq": "BIGINT",
    "interval_start": "BIGINT",
    "interval_end": "BIGINT",
    "warmup": "BOOLEAN",
    "count": "BIGINT",
    "emitted_at": "DOUBLE",
    "incomplete": "BOOLEAN",
    **dict.fromkeys(COUNTERS, "BIGINT"),
}
"""Types of the landing fields that are not strings."""

SOURCE_FILE = "source_file"
PROBLEM = "_problem"
"""Why a landing line cannot be used (set by :mod:`loadgen.pipeline.parse`), null when it can."""
RAW_LINE = "_raw"
"""The start of an unusable line, for the quarantine table."""

_LABELS = [
    ("run_id", "STRING"),
    ("metric", "STRING"),
    ("workload", "STRING"),
    ("driver", "STRING"),
    ("driver_kind", "STRING"),
    ("workers", "INT"),
]
_COUNTERS = [(name, "BIGINT") for name in COUNTERS]
_LATENCY = [
    ("count", "BIGINT"),
    ("mean", "DOUBLE"),
    ("min", "BIGINT"),
    ("p50", "BIGINT"),
    ("p75", "BIGINT"),
    ("p95", "BIGINT"),
    ("p99", "BIGINT"),
    ("p999", "BIGINT"),
    ("p9999", "BIGINT"),
    ("max", "BIGINT"),
    ("hist", "STRING"),
]

TABLES: dict[str, list[tuple[str, str]]] = {
    "intervals": [
        *_LABELS,
        ("seq", "BIGINT"),
        ("interval_start", "BIGINT"),
        ("interval_end", "BIGINT"),
        ("warmup", "BOOLEAN"),
        ("workers_reported", "INT"),
        ("complete", "BOOLEAN"),
        *_COUNTERS,
        *_LATENCY,
        ("merged_at", "DOUBLE"),
    ],
    "runs": [
        *_LABELS,
        ("intervals", "INT"),
        ("run_start", "BIGINT"),
        ("run_end", "BIGINT"),
        ("seconds", "DOUBLE"),
        ("complete", "BOOLEAN"),
        ("stop_reason", "STRING"),
        *_COUNTERS,
        ("publish_rate", "DOUBLE"),
        ("consume_rate", "DOUBLE"),
        *_LATENCY,
        ("meta", "STRING"),
        ("merged_at", "DOUBLE"),
    ],
    "quarantine": [
        ("source_file", "STRING"),
        ("run_id", "STRING"),
        ("metric", "STRING"),
        ("reason", "STRING"),
        ("raw", "STRING"),
        ("quarantined_at", "DOUBLE"),
    ],
}
"""Each output table's columns and Spark types, in order."""

CHECKPOINT = "_checkpoint"
"""``OUT/_checkpoint``: the streaming job's offsets and commits (which files each batch read)."""
STATE = "_state"
"""``OUT/_state/batch=<id>``: the merge's state after a batch (:mod:`loadgen.pipeline.state`)."""
LANDED = "_landed"
"""``OUT/_landed``: landing files the job has committed, moved out of the landing directory."""
QUARANTINED = "_quarantined"
"""``OUT/_quarantined/batch=<id>/``: copies of files with quarantined lines, and the reasons."""


def ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns)


ARROW_TYPES = {"STRING": "string", "INT": "int32", "BIGINT": "int64", "DOUBLE": "float64"}


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """The Parquet schema of a table: the same types Spark gives ``ddl(columns)``."""
    import pyarrow as pa

    return pa.schema(
        [(name, pa.bool_() if kind == "BOOLEAN" else ARROW_TYPES[kind]) for name, kind in columns]
    )
