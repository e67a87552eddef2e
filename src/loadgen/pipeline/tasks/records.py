"""The pipeline's record layouts: landing lines in; ``intervals``, ``runs``, ``quarantine`` out.

Spark DDL strings (no pyspark import), so the CLI can show them and the tests can check the
merge's rows against them without starting Spark. Latencies are µs, Java-equal percentiles;
``hist`` is the merged HdrHistogram (V2, base64) so later queries can merge again exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

INTERVAL = "interval"
END = "end"
CLOSE = "close"
"""A line written by ``loadgen pipeline close``: finalise a run whose workers will never end it."""

COUNTERS = ("sent", "received", "send_errors", "bytes_sent", "bytes_received", "negative_e2e")
"""The interval's counters, carried on every metric's line (the same values on each)."""

RECORD_FIELDS = (
    "kind",
    "run_id",
    "worker_id",
    "workers",
    "seq",
    "interval_start",
    "interval_end",
    "warmup",
    "metric",
    "count",
    "hist",
    *COUNTERS,
    "emitted_at",
    "workload",
    "driver",
    "driver_kind",
    "meta",
    "incomplete",
    "stop_reason",
    "faults",
)
"""Every field a landing line may carry; ``interval`` lines leave the last three out and
``end`` lines leave the interval fields out (``seq`` there is the number of intervals the worker
wrote; ``faults`` is the result's ``faults`` block as JSON text, or absent)."""

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
"""Why a landing line cannot be used (set by :mod:`loadgen.pipeline.tasks.parse`), null when
it can."""
RAW_LINE = "_raw"
"""The start of an unusable line, for the quarantine table."""
META_DIGEST = "_meta_digest"
"""A digest of a line's ``meta``. The parse task hands on a run's configuration (``meta``, ~1 KB
on every line) once per (run, metric) and task, the digest alone on its other lines: the
shuffle then moves a third of the bytes, and the merge puts each ``meta`` back from the line
that carried it (:class:`loadgen.pipeline.tasks.parse.MetaOnce`)."""
STATE = "state"
"""A (run, metric) group's merge state between micro-batches, as JSON text."""
TABLE = "table"
"""Which table a row of the merge's output belongs to (or :data:`STATE`)."""

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
        ("faults", "STRING"),
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

STATE_COLUMNS = [("run_id", "STRING"), ("metric", "STRING"), (STATE, "STRING")]
"""The state table: one row per (run, metric) group the job has seen."""

PARSED_COLUMNS = [
    *((name, LANDING_TYPES.get(name, "STRING")) for name in RECORD_FIELDS),
    (SOURCE_FILE, "STRING"),
    (PROBLEM, "STRING"),
    (RAW_LINE, "STRING"),
    (META_DIGEST, "STRING"),
    (STATE, "STRING"),
]
"""What the parse task hands the merge: a landing line's fields, or a problem row, or (from
the state table, the other input of the merge) a group's state."""


def _output_columns() -> list[tuple[str, str]]:
    columns = {TABLE: "STRING"}
    for name, kind in [*(c for cols in TABLES.values() for c in cols), *STATE_COLUMNS]:
        columns.setdefault(name, kind)
    return list(columns.items())


OUTPUT_COLUMNS = _output_columns()
"""The merge task's output: every table's columns (the same name has the same type in each),
plus :data:`TABLE` saying which table the row is for."""


def ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns)


ARROW_TYPES = {"STRING": "string", "INT": "int32", "BIGINT": "int64", "DOUBLE": "float64"}


def arrow_schema(columns: list[tuple[str, str]]) -> pa.Schema:
    """The Arrow schema Spark gives ``ddl(columns)``."""
    import pyarrow as pa

    return pa.schema(
        [(name, pa.bool_() if kind == "BOOLEAN" else ARROW_TYPES[kind]) for name, kind in columns]
    )
