"""Result file names and crash-safe writes."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_safe(text: str) -> str:
    """``text`` with every run of characters outside [A-Za-z0-9._-] replaced by one '-'."""
    return UNSAFE.sub("-", text).strip("-.") or "unnamed"


def result_stem(workload_name: str, driver_name: str, when: datetime) -> str:
    """``<workload>-<driver>-<UTC yyyy-mm-dd-HH-MM-SS>`` (OMB's pattern, in UTC)."""
    stamp = when.astimezone(UTC).strftime("%Y-%m-%d-%H-%M-%S")
    return f"{file_safe(workload_name)}-{file_safe(driver_name)}-{stamp}"


def write_json_atomic(path: Path, document: Any) -> None:
    """Write pretty JSON so that ``path`` holds either nothing or the whole document."""
    write_text_atomic(path, json.dumps(document, indent=2, allow_nan=False) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` holds either nothing or all of it."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` holds either nothing or all of it (temp file + rename).

    The temporary file is created with the umask's permissions (not mkstemp's 0600), so results
    and reports are as readable as any other file the user writes.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def all_or_none() -> Iterator[list[Path]]:
    """Files whose paths the block appends to the yielded list are removed if the block raises.

    A set of files (a summary and its report) is then whole in one place or not there at all:
    when a disk fills after the first one, the set goes to a fallback directory without leaving
    a second copy of the first one behind (:mod:`loadgen.result_files.destination`).
    """
    written: list[Path] = []
    try:
        yield written
    except BaseException:
        for path in written:
            with contextlib.suppress(OSError):  # the disk that failed may refuse this too
                path.unlink()
        raise


def csv_text(head: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A header and rows as CSV text (``csv`` module quoting, ``\\r\\n`` line ends)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(head)
    writer.writerows(rows)
    return out.getvalue()


def write_csv_atomic(path: Path, head: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    write_text_atomic(path, csv_text(head, rows))
