"""``foreachBatch``: each micro-batch's rows into ``OUT/<table>/batch=<id>/`` as Parquet.

One Spark job per batch: the rows (a few per interval) are collected to the driver as Arrow and
written there with pyarrow, one file per table, by atomic rename. A batch re-run after a crash
replaces its first attempt's files, never adds to them. (Letting Spark write each table cost a
count job and three write jobs per batch: most of the live job's CPU.) ``OUT`` is therefore a
path on the driver's file system.

Every landing file with a quarantined line is also copied to ``OUT/_quarantined/batch=<id>/``
next to a ``.reason`` file; a file that was listed but gone before it could be read (Spark skips
it: ``ignoreMissingFiles``) or empty (Spark skips those too) gets a quarantine row from the
checkpoint's record of the batch.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from loadgen.pipeline.checkpoint import batch_files
from loadgen.pipeline.tables import (
    CHECKPOINT,
    QUARANTINED,
    TABLE_COLUMN,
    TABLES,
    arrow_schema,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

log = logging.getLogger("loadgen.pipeline")

PART = "part-00000.parquet"
VANISHED = "listed for this batch, then gone before it could be read"
EMPTY = "empty file (0 bytes): nothing to read, or still being written"


def local_path(uri: str) -> Path | None:
    """The local path of a ``file:`` URI from Spark (None for another file system)."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme in ("", "file") else None


def write_table(rows: pa.Table, directory: Path) -> None:
    """``rows`` as ``directory/PART``, replacing what a first attempt of the batch wrote."""
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{PART}.{os.getpid()}"
    pq.write_table(rows, temporary)
    os.replace(temporary, directory / PART)


class BatchWriter:
    """Writes every micro-batch and keeps the totals for the job's last line."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.totals = dict.fromkeys(TABLES, 0)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        import pyarrow as pa

        merged = batch.toArrow()
        unread = self._unread(batch_id)
        written = {}
        for table, columns in TABLES.items():
            schema = arrow_schema(columns)
            chosen = merged.filter(pa.compute.equal(merged[TABLE_COLUMN], table))
            rows = chosen.select(schema.names).cast(schema)
            if table == "quarantine" and unread:
                rows = pa.concat_tables([rows, pa.Table.from_pylist(unread, schema)])
            written[table] = rows
            if rows.num_rows:
                write_table(rows, self.out / table / f"batch={batch_id}")
                self.totals[table] += rows.num_rows
        counts = {table: rows.num_rows for table, rows in written.items()}
        if any(counts.values()):
            log.info("batch %d: %s", batch_id, describe(counts))
        if counts["quarantine"]:
            self._quarantine_files(written["quarantine"].to_pylist(), batch_id)

    def _unread(self, batch_id: int) -> list[dict[str, object]]:
        """Quarantine rows for the batch's files Spark gave no rows for: gone, or empty."""
        rows = []
        for uri in batch_files(self.out / CHECKPOINT, batch_id):
            path = local_path(uri)
            if path is None:
                continue
            try:
                reason = EMPTY if path.stat().st_size == 0 else None
            except FileNotFoundError:
                reason = VANISHED
            if reason:
                rows.append({"source_file": uri, "reason": reason, "quarantined_at": time.time()})
        return rows

    def _quarantine_files(self, rows: list[dict[str, object]], batch_id: int) -> None:
        """Log each quarantined line; copy each file it came from aside with its reasons."""
        reasons: dict[str, list[str]] = defaultdict(list)
        for row in rows:
            log.warning("quarantined a line of %s: %s", row["source_file"], row["reason"])
            reasons[str(row["source_file"])].append(str(row["reason"]))
        folder = self.out / QUARANTINED / f"batch={batch_id}"
        folder.mkdir(parents=True, exist_ok=True)
        for uri, why in reasons.items():
            source = local_path(uri)
            name = source.name if source else uri.rsplit("/", 1)[-1]
            copied = "copied here"
            try:
                if source is None:
                    raise FileNotFoundError(uri)
                shutil.copyfile(source, folder / name)
            except OSError as error:
                copied = f"not copied: {error}"
            lines = [uri, copied, *why]
            (folder / f"{name}.reason").write_text("\n".join(lines) + "\n")


def describe(counts: dict[str, int]) -> str:
    return (
        f"{counts.get('intervals', 0)} interval rows, {counts.get('runs', 0)} run rows, "
        f"{counts.get('quarantine', 0)} lines quarantined"
    )
