"""The pipeline's schemas: landing lines in; ``intervals``, ``runs`` and ``quarantine`` out.

Spark DDL strings only (no pyspark import), so the CLI can show them and the tests can check the
merge's rows against them without starting Spark. Latencies are µs, Java-equal percentiles;
``hist`` is the merged HdrHistogram (V2, base64) so later queries can merge again exactly.
"""

from __future__ import annotations

from loadgen.pipeline.landing import COUNTERS, RECORD_FIELDS

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

CORRUPT_RECORD = "_corrupt_record"
"""Where Spark's permissive JSON reader puts a line it cannot parse against the schema."""

LANDING_SCHEMA = ", ".join(
    [f"{name} {LANDING_TYPES.get(name, 'STRING')}" for name in RECORD_FIELDS]
    + [f"{CORRUPT_RECORD} STRING"]
)

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

TABLE_COLUMN = "table"

CHECKPOINT = "_checkpoint"
"""``OUT/_checkpoint``: the streaming job's offsets, commits and merge state."""
LANDED = "_landed"
"""``OUT/_landed``: landing files the job has committed, moved out of the landing directory."""


def _union() -> list[tuple[str, str]]:
    columns: dict[str, str] = {TABLE_COLUMN: "STRING"}
    for table in TABLES.values():
        for name, kind in table:
            if columns.setdefault(name, kind) != kind:
                raise AssertionError(f"column {name} has two types: {columns[name]}, {kind}")
    return list(columns.items())


MERGED_COLUMNS = _union()
"""The merge's output: every table's columns plus :data:`TABLE_COLUMN` saying whose row it is."""


def ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns)
