"""The job's streaming source: each micro-batch's new landing files, recorded before it runs.

Spark's own file source costs the driver's JVM about 0.35 ms per new file (it lists the
directory, logs each file's entry as JSON, reads the log back and lists every file again), and
the executors wait meanwhile: seconds for a batch of thousands of files (bench/results/pipeline.md
"The job's own loop instead of Spark's file source"). This source lists the directory once per
batch (``os.scandir`` for a local one, Hadoop's FileSystem otherwise) and records the batch's
files as one text file.

The record, under ``OUT/_checkpoint`` (:class:`BatchLog`):

- ``listed/<id>``: the URIs of batch ``id``'s files, one a line, in place (by rename) before the
  batch runs;
- ``done/<id>``: after the batch committed its tables and its merge state.

A batch listed but not done was cut short: a restart runs it again on the same files (the batch
replaces what its first attempt wrote, :mod:`loadgen.pipeline.sink`). A file is new when no
batch listed it. Files of a done batch then move to ``OUT/_landed`` (unless kept); a restart
moves the last done batch's files again, in case the job stopped while moving them. Names
starting with ``.`` or ``_`` are not listed: files being written (loadgen lands by rename from a
dot-name) and Hadoop's markers.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

from loadgen.base.errors import ConfigError
from loadgen.pipeline.hadoop_fs import HadoopFiles, file_name, is_uri, join

LISTED = "listed"
DONE = "done"
COMPACT_EVERY = 100
"""Every this many batches the listings so far become one ``<id>.compact`` file (only names
still in the landing directory), so a restart reads a few files, not one per batch."""
COMPACTED = ".compact"
SPARK_OFFSETS = "offsets"
"""In a checkpoint Spark's streaming file source wrote (loadgen 0.1.0's job)."""


def hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def local_path(location: str) -> str | None:
    """The local path of a plain path or a ``file:`` URI; None for other file systems."""
    if not is_uri(location) and not location.startswith("file:"):
        return location
    parsed = urlparse(location)
    return unquote(parsed.path) if parsed.scheme == "file" else None


@dataclass(frozen=True)
class Landed:
    """A file in the landing directory, as its URI (what the batch's tasks are given)."""

    uri: str
    modified: float


def list_landing(landing: str, files: HadoopFiles) -> list[Landed]:
    """The landing directory's files, oldest first (as Spark's file source took them)."""
    directory = local_path(landing)
    if directory is None:
        found = [Landed(uri, modified) for uri, modified in files.files(landing)]
    else:
        directory = os.path.abspath(directory)
        prefix = Path(directory).as_uri() + "/"  # a name quoted as Path.as_uri does, cheaper
        found = []
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            try:
                if entry.is_file():
                    found.append(Landed(prefix + quote(entry.name), entry.stat().st_mtime))
            except FileNotFoundError:  # moved away since the directory was read
                continue
    visible = (f for f in found if not hidden(file_name(f.uri)))
    return sorted(visible, key=lambda f: (f.modified, f.uri))


def archive(uris: list[str], folder: str, files: HadoopFiles) -> None:
    """Move the files ``uris`` into ``folder`` by name; files already gone are skipped."""
    local_folder = local_path(folder)
    for uri in uris:
        name = file_name(uri)
        source = local_path(uri)
        if local_folder is None or source is None:
            files.move(uri, join(folder, name))
            continue
        os.makedirs(local_folder, exist_ok=True)
        try:
            shutil.move(source, os.path.join(local_folder, unquote(name)))
        except FileNotFoundError:
            continue


class BatchLog:
    """Which files each micro-batch took, and which batches finished (the module's record)."""

    def __init__(self, files: HadoopFiles, folder: str) -> None:
        self.files = files
        self.folder = folder

    def _numbered(self, kind: str, suffix: str = "") -> list[int]:
        names = self.files.names(join(self.folder, kind))
        stems = [name.removesuffix(suffix) for name in names if name.endswith(suffix)]
        return sorted(int(stem) for stem in stems if stem.isdigit())

    def last_done(self) -> int:
        """The highest finished batch; -1 before the first."""
        return max(self._numbered(DONE), default=-1)

    def listing(self, batch_id: int) -> list[str] | None:
        """Batch ``batch_id``'s files; None when it was not listed (or compacted away)."""
        uri = join(self.folder, LISTED, str(batch_id))
        if not self.files.exists(uri):
            return None
        return self._lines(uri)

    def _lines(self, uri: str) -> list[str]:
        return [line for line in self.files.read_text(uri).splitlines() if line]

    def seen(self) -> set[str]:
        """Every file some batch listed: the newest compacted set and the listings after it."""
        compacted = self._numbered(LISTED, COMPACTED)
        found = set()
        if compacted:
            found |= set(self._lines(join(self.folder, LISTED, f"{compacted[-1]}{COMPACTED}")))
        for batch_id in self._numbered(LISTED):
            found |= set(self.listing(batch_id) or [])
        return found

    def record(self, batch_id: int, uris: list[str], seen: set[str]) -> None:
        """Batch ``batch_id`` takes ``uris``; ``seen`` (the files listed before, still in the
        landing directory) is compacted every :data:`COMPACT_EVERY` batches."""
        self._write(join(self.folder, LISTED), str(batch_id), uris)
        if batch_id % COMPACT_EVERY or not batch_id:
            return
        self._write(join(self.folder, LISTED), f"{batch_id}{COMPACTED}", sorted(seen | set(uris)))
        self._drop_before(batch_id, LISTED)
        self._drop_before(batch_id, LISTED, COMPACTED)

    def finish(self, batch_id: int) -> None:
        """Batch ``batch_id`` committed; only the newest marker is kept."""
        self.files.write_text(join(self.folder, DONE, str(batch_id)), "")
        self._drop_before(batch_id, DONE)

    def _drop_before(self, batch_id: int, kind: str, suffix: str = "") -> None:
        """Delete ``kind``'s numbered files (ending in ``suffix``) below ``batch_id``."""
        for older in self._numbered(kind, suffix):
            if older < batch_id:
                self.files.delete_matching(join(self.folder, kind, f"{older}{suffix}"))

    def _write(self, folder: str, name: str, lines: list[str]) -> None:
        """``lines`` as ``folder/name``, complete or not at all (written aside, then renamed)."""
        aside = join(folder, f".{name}.writing")
        self.files.write_text(aside, "".join(f"{line}\n" for line in lines))
        self.files.move(aside, join(folder, name))


class LandingSource:
    """The micro-batches of one job: a batch cut short first, then the new files in order."""

    def __init__(
        self, landing: str, checkpoint: str, files: HadoopFiles, *, landed: str | None
    ) -> None:
        """``checkpoint``: the :class:`BatchLog`'s folder; ``landed``: where done batches'
        files move (None: they stay in the landing directory)."""
        self.landing = landing
        self.files = files
        self.landed = landed
        self.log = BatchLog(files, checkpoint)
        self.next_id = self.log.last_done() + 1
        if self.next_id == 0 and files.exists(join(checkpoint, SPARK_OFFSETS)):
            raise ConfigError(
                "this --out holds the checkpoint of Spark's file source, written by loadgen "
                "0.1.0's job, which this job cannot resume (its tables stay readable)",
                path="--out",
                value=checkpoint.rsplit("/", 1)[0],
                allowed="a new directory, or one this version's job wrote",
            )
        self.seen = self.log.seen()
        previous = self.log.listing(self.next_id - 1)
        if landed and previous:
            archive(previous, landed, files)

    def unfinished(self) -> tuple[int, list[str]] | None:
        """The batch listed but not done when the job last stopped, to run again."""
        listing = self.log.listing(self.next_id)
        return None if listing is None else (self.next_id, listing)

    def new_files(self) -> list[str]:
        """The landing files no batch listed, oldest first."""
        present = [f.uri for f in list_landing(self.landing, self.files)]
        self.seen &= set(present)
        return [uri for uri in present if uri not in self.seen]

    def start(self, uris: list[str]) -> int:
        """Record the next batch's files before it runs; its id."""
        self.log.record(self.next_id, uris, self.seen)
        self.seen |= set(uris)
        return self.next_id

    def finish(self, batch_id: int, uris: list[str]) -> None:
        """The batch committed: mark it done, then move its files out of the landing."""
        self.log.finish(batch_id)
        self.next_id = batch_id + 1
        if self.landed:
            archive(uris, self.landed, self.files)
