"""Which landing files a micro-batch was given, read from the streaming checkpoint.

Spark records them before the batch runs: ``offsets/<batch>`` holds the file source's log
offset after the batch, and ``sources/0/<n>`` (or the compacted ``<n>.compact``, every tenth)
the files of each source batch ``n``. The files of query batch ``b`` are those with source
batch ids in (offset of ``b - 1``, offset of ``b``].
"""

from __future__ import annotations

import json

from loadgen.pipeline.hadoop_fs import HadoopFiles, join


def _json_lines(files: HadoopFiles, uri: str) -> list[dict]:
    """The entries of a Spark metadata log file: a version line, then one JSON per line."""
    lines = files.read_text(uri).splitlines()[1:]
    return [json.loads(line) for line in lines if line.strip().startswith("{")]


def _source_offset(files: HadoopFiles, checkpoint: str, batch_id: int) -> int:
    uri = join(checkpoint, "offsets", str(batch_id))
    if batch_id < 0 or not files.exists(uri):
        return -1
    entries = _json_lines(files, uri)  # the batch's metadata, then one offset per source
    return int(entries[-1]["logOffset"]) if entries else -1


def batch_files(files: HadoopFiles, checkpoint: str, batch_id: int) -> list[str]:
    """The file URIs of ``batch_id``, in listing order ([] if the log says nothing)."""
    first = _source_offset(files, checkpoint, batch_id - 1) + 1
    last = _source_offset(files, checkpoint, batch_id)
    folder = join(checkpoint, "sources", "0")
    names = files.names(folder) if last >= first else []
    found = []
    for source_batch in range(first, last + 1):
        name = _log_file(names, source_batch)
        if name is not None:
            entries = _json_lines(files, join(folder, name))
            found += [e["path"] for e in entries if e.get("batchId") == source_batch]
    return found


def _log_file(names: list[str], source_batch: int) -> str | None:
    """The batch's own log file, or the first compacted one that holds it (Spark deletes the
    single files some minutes after compacting them)."""
    if str(source_batch) in names:
        return str(source_batch)
    compacted = sorted(
        (int(name.split(".")[0]), name)
        for name in names
        if name.endswith(".compact") and int(name.split(".")[0]) >= source_batch
    )
    return compacted[0][1] if compacted else None
