"""Which landing files a micro-batch was given, read from the streaming checkpoint.

Spark records them before the batch runs: ``offsets/<batch>`` holds the file source's log
offset after the batch, and ``sources/0/<n>`` (or the compacted ``<n>.compact``, every tenth)
the files of each source batch ``n``. The files of query batch ``b`` are those with source
batch ids in (offset of ``b - 1``, offset of ``b``].
"""

from __future__ import annotations

import json
from pathlib import Path


def _json_lines(path: Path) -> list[dict]:
    """The entries of a Spark metadata log file: a version line, then one JSON per line."""
    lines = path.read_text().splitlines()[1:]
    return [json.loads(line) for line in lines if line.strip().startswith("{")]


def _source_offset(checkpoint: Path, batch_id: int) -> int:
    path = checkpoint / "offsets" / str(batch_id)
    if batch_id < 0 or not path.exists():
        return -1
    entries = _json_lines(path)  # the batch's metadata, then one offset per source
    return int(entries[-1]["logOffset"]) if entries else -1


def batch_files(checkpoint: Path, batch_id: int) -> list[str]:
    """The file URIs of ``batch_id``, in listing order ([] if the log says nothing)."""
    first, last = _source_offset(checkpoint, batch_id - 1) + 1, _source_offset(checkpoint, batch_id)
    folder = checkpoint / "sources" / "0"
    files = []
    for source_batch in range(first, last + 1):
        path = _log_file(folder, source_batch)
        if path is not None:
            entries = _json_lines(path)
            files += [e["path"] for e in entries if e.get("batchId") == source_batch]
    return files


def _log_file(folder: Path, source_batch: int) -> Path | None:
    """The batch's own log file, or the first compacted one that holds it (Spark deletes the
    single files some minutes after compacting them)."""
    single = folder / str(source_batch)
    if single.exists():
        return single
    compacted = sorted(
        (int(path.name.split(".")[0]), path)
        for path in folder.glob("*.compact")
        if int(path.name.split(".")[0]) >= source_batch
    )
    return compacted[0][1] if compacted else None
