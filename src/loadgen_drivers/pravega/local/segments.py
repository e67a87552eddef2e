"""The local Pravega's data: segments in memory, shared by its controller and its segment store.

Both servers run on one asyncio loop in one process, so nothing here locks: every method runs
to completion between awaits. The controller creates, seals, merges and deletes segments; the
segment store appends, reads and keeps table entries. Memory is bounded by ``max_bytes`` over
all segments: an append past it is refused (:class:`StoreFull`), never silently dropped.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

DEFAULT_MAX_BYTES = 1 << 30
"""1 GiB of event data over all segments, the default bound of a local Pravega."""


class SegmentError(Exception):
    """An operation a real segment store refuses; the wire reply names which kind."""


class NoSuchSegment(SegmentError):
    pass


class SegmentSealed(SegmentError):
    pass


class SegmentExists(SegmentError):
    pass


class StoreFull(SegmentError):
    pass


class TableKeyMissing(SegmentError):
    """A conditional table update or removal named a key that does not exist."""


class TableKeyBadVersion(SegmentError):
    """A conditional table update or removal named a version the key no longer has."""


class BadOffset(SegmentError):
    """An offset the segment refuses: a table update conditional on another table length, or
    a truncation past the end. ``expected`` is the offset the segment has (Pravega's reply
    carries it), ``given`` the one asked for."""

    def __init__(self, reason: str, expected: int, given: int) -> None:
        super().__init__(reason)
        self.expected = expected
        self.given = given


class TableNotEmpty(SegmentError):
    pass


KEY_NO_VERSION = -(2**63)
"""A table key version meaning "whatever the current one": an unconditional update."""
KEY_NOT_EXISTS = -1
"""A table key version meaning "the key must not exist yet"."""
TABLE_RECORD_HEADER = 16
"""Bytes a table segment spends per record besides key and value (positions only need to grow
like a real table segment's length does)."""


@dataclass
class TableEntry:
    value: bytes
    version: int
    """The segment offset at which this entry was written, as Pravega's table segments version
    entries: a conditional update names the version it read."""


@dataclass
class Segment:
    name: str
    data: bytearray = field(default_factory=bytearray)
    start: int = 0
    """The offset of ``data[0]``: bytes before it were truncated away."""
    sealed: bool = False
    attributes: dict[bytes, int] = field(default_factory=dict)
    """Segment attributes by their 16-byte id (writers' last event numbers among them)."""
    table: dict[bytes, TableEntry] | None = None
    """The entries of a table segment; None for an event segment."""
    table_length: int = 0
    """The length a real table segment would have after its updates and removals: entry
    versions and delta-read positions are offsets in it, as in Pravega."""
    grown: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when bytes are appended or the segment is sealed: a read waiting at the tail wakes."""

    @property
    def length(self) -> int:
        return self.start + len(self.data)

    def wake_readers(self) -> None:
        self.grown.set()
        self.grown = asyncio.Event()


class Segments:
    """Every segment of the local Pravega by its qualified name (``scope/stream/N.#epoch.E``,
    a transaction's with ``#transaction.ID`` after it, table segments by their own names)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.stored_bytes = 0
        self._segments: dict[str, Segment] = {}

    def create(self, name: str, *, table: bool = False) -> Segment:
        if name in self._segments:
            raise SegmentExists(name)
        segment = Segment(name, table={} if table else None)
        self._segments[name] = segment
        return segment

    def get(self, name: str) -> Segment:
        try:
            return self._segments[name]
        except KeyError:
            raise NoSuchSegment(name) from None

    def exists(self, name: str) -> bool:
        return name in self._segments

    def append(self, name: str, data: bytes) -> int:
        """Appends ``data`` and returns the segment's new length."""
        segment = self.get(name)
        if segment.sealed:
            raise SegmentSealed(name)
        if self.stored_bytes + len(data) > self.max_bytes:
            raise StoreFull(f"{name}: the local Pravega holds at most {self.max_bytes} bytes")
        segment.data += data
        self.stored_bytes += len(data)
        segment.wake_readers()
        return segment.length

    def read(self, name: str, offset: int, max_length: int) -> bytes:
        """Up to ``max_length`` bytes from ``offset`` (empty at the tail)."""
        segment = self.get(name)
        if offset < segment.start:
            raise SegmentError(f"{name}: offset {offset} was truncated (starts at {segment.start})")
        at = offset - segment.start
        return bytes(segment.data[at : at + max_length])

    def seal(self, name: str) -> Segment:
        segment = self.get(name)
        segment.sealed = True
        segment.wake_readers()
        return segment

    def truncate(self, name: str, offset: int) -> None:
        """Drops the bytes before ``offset``; past the end is refused, as Pravega does."""
        segment = self.get(name)
        if offset > segment.length:
            raise BadOffset(f"{name}: truncation at {offset}, past its end", segment.length, offset)
        if offset > segment.start:
            dropped = offset - segment.start
            del segment.data[:dropped]
            segment.start += dropped
            self.stored_bytes -= dropped

    def merge(self, target: str, source: str) -> int:
        """Appends sealed-or-not ``source`` to ``target`` whole and deletes it (a transaction's
        commit); returns the target's new length."""
        moved = self.get(source)
        into = self.get(target)
        if into.sealed:
            raise SegmentSealed(target)
        into.data += moved.data
        del self._segments[source]
        into.wake_readers()
        return into.length

    def delete(self, name: str) -> None:
        """Removes an event or table segment and frees what it held."""
        segment = self._segments.pop(name, None)
        if segment is None:
            raise NoSuchSegment(name)
        table = segment.table or {}
        self.stored_bytes -= len(segment.data) + sum(self._entry_bytes(table, k) for k in table)
        segment.sealed = True
        segment.wake_readers()

    def table(self, name: str) -> dict[bytes, TableEntry]:
        """The entries of table segment ``name`` (an event segment of that name does not count)."""
        table = self.get(name).table
        if table is None:
            raise NoSuchSegment(name)
        return table

    def update_table(
        self, name: str, entries: list[tuple[bytes, bytes, int]], offset: int = -1
    ) -> list[int]:
        """Writes ``(key, value, expected version)`` entries all or none, as Pravega's table
        store does, and returns their new versions. ``offset`` other than -1: only if the
        table segment's length is that."""
        table = self._checked_table(name, [(key, version) for key, _, version in entries], offset)
        growth = sum(len(k) + len(v) - self._entry_bytes(table, k) for k, v, _ in entries)
        if self.stored_bytes + growth > self.max_bytes:
            raise StoreFull(f"{name}: the local Pravega holds at most {self.max_bytes} bytes")
        segment = self.get(name)
        versions = []
        for key, value, _ in entries:
            self.stored_bytes -= self._entry_bytes(table, key)
            table[key] = TableEntry(value, segment.table_length)
            self.stored_bytes += len(key) + len(value)
            versions.append(segment.table_length)
            segment.table_length += TABLE_RECORD_HEADER + len(key) + len(value)
        return versions

    def remove_table_keys(self, name: str, keys: list[tuple[bytes, int]], offset: int = -1) -> None:
        """Removes ``(key, expected version)`` keys all or none; an unconditional removal of a
        missing key is a no-op, as in Pravega."""
        table = self._checked_table(name, keys, offset)
        segment = self.get(name)
        for key, _ in keys:
            self.stored_bytes -= self._entry_bytes(table, key)
            if table.pop(key, None) is not None:
                segment.table_length += TABLE_RECORD_HEADER + len(key)

    def table_changes(
        self, name: str, position: int, count: int
    ) -> tuple[list[tuple[bytes, TableEntry]], int, bool]:
        """Up to ``count`` live entries written at ``position`` or later, oldest first, the
        position after the last of them, and whether no later entry remains (a delta read:
        removed keys simply do not appear)."""
        table = self.table(name)
        later = sorted(
            ((key, entry) for key, entry in table.items() if entry.version >= position),
            key=lambda item: item[1].version,
        )
        page = later[: max(count, 1)]
        if page:
            key, entry = page[-1]
            position = entry.version + TABLE_RECORD_HEADER + len(key) + len(entry.value)
        return page, position, len(page) == len(later)

    def delete_table(self, name: str, must_be_empty: bool) -> None:
        table = self.table(name)
        if must_be_empty and table:
            raise TableNotEmpty(name)
        self.delete(name)

    def _checked_table(
        self, name: str, keys: list[tuple[bytes, int]], offset: int
    ) -> dict[bytes, TableEntry]:
        table = self.table(name)
        length = self.get(name).table_length
        if offset != -1 and offset != length:
            raise BadOffset(f"{name}: table length is {length}, not {offset}", length, offset)
        for key, expected in keys:
            current = table.get(key)
            if expected == KEY_NO_VERSION:
                continue
            if expected == KEY_NOT_EXISTS:
                if current is not None:
                    raise TableKeyBadVersion(name)
            elif current is None:
                raise TableKeyMissing(name)
            elif current.version != expected:
                raise TableKeyBadVersion(name)
        return table

    @staticmethod
    def _entry_bytes(table: dict[bytes, TableEntry], key: bytes) -> int:
        entry = table.get(key)
        return 0 if entry is None else len(key) + len(entry.value)

    def names(self) -> list[str]:
        return list(self._segments)
