"""Landing files as bytes → landing lines, every defect named instead of raised.

Spark's JSON reader hands a line with invalid UTF-8 to Arrow as a broken string, and the whole
micro-batch fails — again on every restart, since the restart replays that batch. So the job reads
each file as bytes (Spark's ``binaryFile`` source) and this module, in the executors' parse
task (:func:`parse_batches`), turns it into rows: a usable line becomes its fields, anything
else a row whose :data:`~loadgen.pipeline.tasks.records.PROBLEM` says why (the merge
quarantines it). Nothing in a file can raise here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from loadgen.pipeline.tasks.collector import collector_paused
from loadgen.pipeline.tasks.records import (
    LANDING_TYPES,
    META_DIGEST,
    PARSED_COLUMNS,
    PROBLEM,
    RAW_LINE,
    RECORD_FIELDS,
    SOURCE_FILE,
    arrow_schema,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator

MAX_LINE_BYTES = 1 << 20
"""A landing line is a few KB (one histogram); a line over 1 MiB is not one of ours."""
RAW_KEPT = 2000
"""Characters of a bad line kept in the quarantine table (the whole file is copied aside)."""

EMPTY = "empty file (0 bytes): nothing to read, or still being written"
VANISHED = "listed for this batch, then gone before it could be read"
UNTERMINATED = (
    "the last line has no newline: the file was cut short or is still being written "
    "(land files under a name starting with '.' and rename them when complete)"
)

_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "INT": (int,),
    "BIGINT": (int,),
    "BOOLEAN": (bool,),
    "DOUBLE": (int, float),
    "STRING": (str,),
}
_INT_BITS = {"INT": 31, "BIGINT": 63, "DOUBLE": 63}
_CHECKS = {
    name: (kind, _PYTHON_TYPES[kind], -(1 << bits), 1 << bits)
    for name in RECORD_FIELDS
    for kind in [LANDING_TYPES.get(name, "STRING")]
    for bits in [_INT_BITS.get(kind, 0)]
}
"""Per field: its Spark type, the exact Python types ``json`` gives for it (``bool`` is not an
``int`` here) and the range ``[low, high)`` an integer must be in (where ints are allowed)."""


def _raw(line: bytes) -> str:
    text = line[:RAW_KEPT].decode("utf-8", errors="backslashreplace")
    return text if len(line) <= RAW_KEPT else f"{text}… ({len(line)} bytes)"


def _problem_row(path: str, reason: str, line: bytes = b"") -> dict[str, Any]:
    return {SOURCE_FILE: path, PROBLEM: reason, RAW_LINE: _raw(line)}


def _type_problem(record: dict[str, Any]) -> str | None:
    """Why a field would not convert to its Spark type (Arrow would fail the whole batch).
    Fields we do not keep are not converted, so not checked; a line's fields are checked in the
    line's order, in one pass (this runs for every line)."""
    checks = _CHECKS
    for name, value in record.items():
        check = checks.get(name)
        if check is None or value is None:
            continue
        kind, types, low, high = check
        python_type = type(value)
        if python_type not in types:
            got = f"{python_type.__name__} {value!r:.80}"
            return f"JSON of the wrong shape: field {name!r} should be {kind}, got {got}"
        if python_type is int and not low <= value < high:
            return f"field {name!r} is out of range for {kind}: {value}"
        if python_type is str and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"field {name!r} holds an unpaired surrogate escape"
    return None


def parse_line(path: str, line: bytes) -> dict[str, Any]:
    """One line of ``path`` as a landing row, or a problem row saying what is wrong with it."""
    if len(line) > MAX_LINE_BYTES:
        return _problem_row(path, f"a line of {len(line)} bytes (limit {MAX_LINE_BYTES})", line)
    if b"\x00" in line:
        return _problem_row(path, f"NUL byte at offset {line.index(0)}", line)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return _problem_row(path, f"not UTF-8: {error.reason} at byte {error.start}", line)
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as error:
        return _problem_row(path, f"not JSON: {error}", line)
    if not isinstance(record, dict):
        shape = f"a {type(record).__name__}, not an object"
        return _problem_row(path, f"JSON of the wrong shape: {shape}", line)
    reason = _type_problem(record)
    if reason is not None:
        return _problem_row(path, reason, line)
    row = {name: record.get(name) for name in RECORD_FIELDS}
    return {**row, SOURCE_FILE: path, PROBLEM: None, RAW_LINE: None}


def parse_file(path: str, content: bytes) -> Iterator[dict[str, Any]]:
    """Every line of one landing file; an unterminated last line, or an empty file, yields a
    problem row (Spark's reader may skip an empty file: :mod:`loadgen.pipeline.sink` then
    quarantines it from the batch's record of its files)."""
    if not content:
        yield _problem_row(path, EMPTY)
        return
    lines = content.split(b"\n")
    last = lines.pop()  # b"" when the file ends with a newline, as every landed file does
    for line in lines:
        if line.strip():
            yield parse_line(path, line)
    if last:
        yield _problem_row(path, UNTERMINATED, last)


def read_local(path: str) -> list[dict[str, Any]]:
    """The rows of the ``file:`` URI ``path``, read here; a file that is gone or unreadable is
    a problem row."""
    try:
        with open(unquote(urlparse(path).path), "rb") as landed:
            content = landed.read()
    except FileNotFoundError:
        return [_problem_row(path, VANISHED)]
    except OSError as error:
        return [_problem_row(path, f"could not be read: {error.strerror or error}")]
    return list(parse_file(path, content))


class MetaOnce:
    """Hands on each (run, metric, ``meta``) once per task: later lines with the same ``meta``
    keep only its :data:`~loadgen.pipeline.tasks.records.META_DIGEST`. The first line and the
    others go to the same merge group in the same batch (the shuffle's key is (run, metric)),
    where :func:`loadgen.pipeline.tasks.merge.restore_meta` puts it back."""

    def __init__(self) -> None:
        self._digests: dict[str, str] = {}
        self._handed_on: set[tuple[str | None, str | None, str]] = set()

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            meta = row.get("meta")
            if meta is None:  # problem rows have no fields
                continue
            digest = self._digests.get(meta)
            if digest is None:
                digest = hashlib.blake2b(meta.encode(), digest_size=16).hexdigest()
                self._digests[meta] = digest
            row[META_DIGEST] = digest
            key = (row["run_id"], row["metric"], digest)
            if key in self._handed_on:
                row["meta"] = None
            else:
                self._handed_on.add(key)


def parse_batches(
    batches: Iterator[pa.RecordBatch], files_read: Accumulator | None = None
) -> Iterator[pa.RecordBatch]:
    """The parse task (``mapInArrow``): ``path`` and ``content`` rows in (or ``path`` alone:
    a ``file:`` URI this task reads itself), one row per landing line out, in
    :data:`~loadgen.pipeline.tasks.records.PARSED_COLUMNS` (``meta`` once per run, metric and
    task: :class:`MetaOnce`); ``files_read`` (a Spark accumulator) counts the files."""
    import pyarrow as pa

    schema = arrow_schema(PARSED_COLUMNS)
    meta_once = MetaOnce()
    for batch in batches:
        if files_read is not None:
            files_read.add(batch.num_rows)
        with collector_paused():
            rows = _parsed_rows(batch)
            meta_once(rows)
            parsed = pa.RecordBatch.from_pylist(rows, schema)
        yield parsed


def _parsed_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The rows of every file of ``batch``: its ``content``, or read here from its ``path``."""
    paths = batch.column("path").to_pylist()
    if "content" not in batch.schema.names:
        return [row for path in paths for row in read_local(path)]
    contents = batch.column("content").to_pylist()
    return [row for path, content in zip(paths, contents, strict=True)
            for row in parse_file(path, content)]  # fmt: skip
