"""Where the pipeline keeps things under ``OUT``: its tables, the batches' record, the merge state.

The tables' columns are :data:`loadgen.pipeline.tasks.records.TABLES`. Each table is
``OUT/<table>/day=<YYYY-MM-DD>/batch=<id>/part-*.parquet``, written by Spark's writer.
"""

from __future__ import annotations

from loadgen.pipeline.tasks.records import TABLES

__all__ = ["BATCH", "CHECKPOINT", "DAY", "LANDED", "QUARANTINED", "STATE_TABLE", "TABLES"]

DAY = "day"
"""Partition column: the UTC day of the row (interval start, run start, or quarantine time)."""
BATCH = "batch"
"""Partition column under ``day``: the micro-batch that wrote the row (a re-run replaces it)."""
CHECKPOINT = "_checkpoint"
"""``OUT/_checkpoint``: which files each batch took, and which finished
(:mod:`loadgen.pipeline.source`)."""
STATE_TABLE = "_state"
"""``OUT/_state/batch=<id>``: the merge's state after a batch (:mod:`loadgen.pipeline.state`)."""
LANDED = "_landed"
"""``OUT/_landed``: landing files the job has committed, moved out of the landing directory."""
QUARANTINED = "_quarantined"
"""``OUT/_quarantined/batch=<id>/``: copies of files with quarantined lines, and the reasons."""
