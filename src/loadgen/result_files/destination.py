"""Where a run's files go, and where they go instead when the disk there fails mid-run.

An hour of measurement must not be lost to a full disk, a quota, a file system remounted
read-only or a directory taken away. The run's files go to the first place of an ordered list
that takes them:

1. the directory asked for (``-o``);
2. ``$XDG_CACHE_HOME/loadgen/results`` (``~/.cache/loadgen/results`` when unset);
3. ``$TMPDIR/loadgen-results`` (the system's temporary directory when unset).

A write that fails with a disk error (:data:`DISK_ERRORS`) moves the run to the next place that
passes :func:`loadgen.base.writable.problem`, and is made again there in full: a writer is
handed the directory on each write, so it writes everything anew when that changes. Each move is
logged once and kept in :attr:`Destination.moves`, for the console, the result's
``run.output`` and the exit code. When no place is left, :class:`~loadgen.base.errors.NoPlaceLeft`
is raised and the caller keeps the result in memory (and prints it, as the CLI does).
"""

from __future__ import annotations

import errno
import logging
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from loadgen.base.errors import NoPlaceLeft
from loadgen.base.writable import describe, problem

log = logging.getLogger("loadgen.results")

T = TypeVar("T")

DISK_ERRORS = frozenset(
    {
        errno.ENOSPC,  # no space left on device
        errno.EDQUOT,  # disk quota exceeded
        errno.EFBIG,  # file too large (a size limit of the file system or of the process)
        errno.EROFS,  # read-only file system (remounted after an error)
        errno.EIO,  # the device failed
        errno.EACCES,  # permission denied (the directory's mode or owner changed)
        errno.EPERM,  # operation not permitted (an immutable directory, a security module)
        errno.ENOENT,  # the directory, or one above it, was removed and cannot be made again
        errno.ENOTDIR,  # a file was put where the directory was
        errno.ESTALE,  # a network file system's handle went stale
    }
)
"""The errors that say "this place cannot take the files", as opposed to a bug in loadgen:
writing the same files elsewhere may work."""


def fallback_directories() -> list[Path]:
    """The places after the asked one: the user's cache directory, then the temporary one.

    ``$TMPDIR`` is read as set (``tempfile.gettempdir`` silently skips an unusable one): the
    place this names is the one checked and reported.
    """
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    temporary = os.environ.get("TMPDIR") or tempfile.gettempdir()
    return [Path(cache) / "loadgen" / "results", Path(temporary) / "loadgen-results"]


@dataclass(frozen=True)
class Move:
    """The run's files left ``left`` (``reason``) for ``to``; ``None``: for nowhere."""

    left: Path
    to: Path | None
    reason: str


class Destination:
    """The directory a run's files go to now, moved along the list when writing there fails.

    Used from one thread at a time: the journal's writer thread while the run goes, then the
    run's end once that thread has stopped (a writer abandoned on a hung disk is the exception:
    it is told to add nothing more, see :meth:`loadgen.result_files.checkpoint.Checkpoint.close`).
    """

    def __init__(self, asked: Path, fallbacks: Sequence[Path] | None = None) -> None:
        self.asked = asked
        self._places = [asked, *(fallback_directories() if fallbacks is None else fallbacks)]
        self._at = 0
        self.moves: list[Move] = []

    @property
    def directory(self) -> Path | None:
        """Where the files go now; ``None`` once no place has taken them."""
        return self._places[self._at] if self._at < len(self._places) else None

    @property
    def visited(self) -> list[Path]:
        """Every place the files were sent to before the current one (they may hold some)."""
        return self._places[: min(self._at, len(self._places))]

    def write(self, fn: Callable[[Path], T]) -> T:
        """``fn(directory)``, moving on and calling it again while it fails with a disk error;
        :class:`NoPlaceLeft` when every place has failed."""
        while (directory := self.directory) is not None:
            try:
                return fn(directory)
            except OSError as error:
                if error.errno is not None and error.errno not in DISK_ERRORS:
                    raise  # a short write has no errno: the disk took part of it, then no more
                self._move(
                    f"{describe(error)}: {error.filename}" if error.filename else describe(error)
                )
        raise NoPlaceLeft(self.asked, self.moves[-1].reason if self.moves else "")

    def _move(self, reason: str) -> None:
        """On to the next place that passes the check; one warning says what happened."""
        left = self._places[self._at]
        self._at += 1
        passed = []
        while (to := self.directory) is not None and (why := problem(to)) is not None:
            passed.append(f"{to} ({why})")
            self._at += 1
        self.moves.append(Move(left, to, reason))
        nor = f"; nor in {', '.join(passed)}" if passed else ""
        then = "no place is left" if to is None else f"writing them in {to}"
        log.warning("cannot write the run's files in %s (%s)%s: %s", left, reason, nor, then)

    def record(self) -> dict[str, Any] | None:
        """The result's ``run.output`` when the files did not stay where asked, else ``None``."""
        if not self.moves:
            return None
        directory = self.directory
        return {
            "asked": str(self.asked),
            "writtenTo": None if directory is None else str(directory),
            "reason": self.moves[0].reason,
        }
