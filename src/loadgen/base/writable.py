"""Can a directory take loadgen's files? Asked before anything starts, and again when a run's
files have to move to another place (:mod:`loadgen.result_files.destination`).

Asking means doing: the directory is created if missing and a small file is written into it and
removed. Permission bits say nothing to root, and a read-only mount or a full disk only shows
when something is written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from loadgen.base.errors import ConfigError

PROBE = b"loadgen checks that this directory takes files\n"


def problem(directory: Path) -> str | None:
    """Why ``directory`` cannot take files (``is a regular file``, ``parent X is a file``,
    ``read-only file system``, ...), or ``None`` when it can; created if missing."""
    if directory.exists() and not directory.is_dir():
        return "is a regular file" if directory.is_file() else "is not a directory"
    blocker = _existing_ancestor(directory)
    if not blocker.is_dir():
        return f"parent {blocker} is a file"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".loadgen-check-", dir=directory)
        try:
            os.write(handle, PROBE)
            os.fsync(handle)
        finally:
            os.close(handle)
            os.unlink(name)
    except OSError as error:
        return describe(error)
    return None


def describe(error: OSError) -> str:
    """The error's own words, lower-cased as a phrase (``no space left on device``)."""
    text = error.strerror or str(error)
    return text[:1].lower() + text[1:]


def _existing_ancestor(directory: Path) -> Path:
    """The nearest of ``directory``'s parents that exists (a dangling path ends at ``/``)."""
    for parent in directory.absolute().parents:
        if parent.exists():
            return parent
    return Path("/")


def check_outputs(outputs: Mapping[str, Path | None]) -> None:
    """Raise :class:`ConfigError` (exit 2) for the first option whose directory cannot take
    files, naming the option, the path and why; ``None`` directories are not asked for."""
    for option, directory in outputs.items():
        if directory is None:
            continue
        why = problem(directory)
        if why is not None:
            raise ConfigError(
                f"cannot write in {directory}: {why}",
                path=option,
                allowed="a writable directory",
            )
