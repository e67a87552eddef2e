"""``foreachBatch``: each micro-batch's landing files parsed, merged and written, in the driver.

One Spark job per batch, which only lists and reads the new landing files; their bytes come to
the driver as Arrow, and everything else is the driver's Python: :mod:`loadgen.pipeline.parse`,
:func:`loadgen.pipeline.merge.advance` per (run, metric) from the state the previous batch left
(:mod:`loadgen.pipeline.state`), then each table written with pyarrow as
``OUT/<table>/batch=<id>/`` by atomic rename, then the new state. No Python runs on the
executors: no Python workers to start, no code to ship, no shuffle, no Spark state store (that
pipeline cost most of the live job's CPU, bench/RESULTS.md). A batch re-run after a crash starts
from the same state and replaces its first attempt's files, never adds to them. ``OUT`` is
therefore a path on the driver's file system.

Every landing file with a quarantined line is also copied to ``OUT/_quarantined/batch=<id>/``
next to a ``.reason`` file; a file that was listed but gone before it could be read (Spark skips
it: ``ignoreMissingFiles``) or empty (Spark skips those too) gets a quarantine row from the
checkpoint's record of the batch.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from loadgen.pipeline import state
from loadgen.pipeline.checkpoint import batch_files
from loadgen.pipeline.merge import RunState, advance
from loadgen.pipeline.parse import parse_file
from loadgen.pipeline.state import Key
from loadgen.pipeline.tables import CHECKPOINT, QUARANTINED, TABLES, arrow_schema
from loadgen.results.files import write_bytes_atomic

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


def merge_files(
    paths: list[str], contents: list[bytes], states: dict[Key, RunState], now: float
) -> dict[str, list[dict[str, Any]]]:
    """One batch's files through parse and merge: each table's rows; ``states`` is advanced in
    place (a group gets a state with its first usable line)."""
    groups: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    for path, content in zip(paths, contents, strict=True):
        for row in parse_file(path, content):
            groups[(row.get("run_id"), row.get("metric"))].append(row)
    rows: dict[str, list[dict[str, Any]]] = {table: [] for table in TABLES}
    for (run_id, metric), lines in groups.items():
        step = advance(run_id, metric, states.get((run_id, metric)), lines, now)
        if step.state is not None:
            states[(run_id, metric)] = step.state
        for table in TABLES:
            rows[table] += getattr(step, table)
    return rows


def rows_table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(rows, arrow_schema(columns))


def write_table(rows: pa.Table, directory: Path) -> None:
    """``rows`` as ``directory/PART``, replacing what a first attempt of the batch wrote."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    encoded = pa.BufferOutputStream()
    pq.write_table(rows, encoded)
    write_bytes_atomic(directory / PART, encoded.getvalue().to_pybytes())


class BatchWriter:
    """Parses, merges and writes every micro-batch; keeps the totals for the job's last line."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.totals = dict.fromkeys(TABLES, 0)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        files = batch.toArrow()
        states = state.load(self.out, batch_id)
        step = merge_files(
            files["path"].to_pylist(), files["content"].to_pylist(), states, time.time()
        )
        step["quarantine"] += self._unread(batch_id)
        counts = {table: len(rows) for table, rows in step.items()}
        for table, rows in step.items():
            if rows:
                write_table(rows_table(rows, TABLES[table]), self.out / table / f"batch={batch_id}")
                self.totals[table] += len(rows)
        if any(counts.values()):
            log.info("batch %d: %s", batch_id, describe(counts))
        if counts["quarantine"]:
            self._quarantine_files(step["quarantine"], batch_id)
        state.save(self.out, batch_id, states)

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
