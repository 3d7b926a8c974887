"""Sparse segment indexes: offset → file position and timestamp → offset.

Entry layouts (big-endian, fixed size so an entry is found by arithmetic):

* ``.index``: relative_offset int32 | position int32, one entry per ``index.interval.bytes``
  of log appended (and one for the first batch), both columns strictly increasing;
* ``.timeindex``: timestamp int64 | relative_offset int32, where the timestamp is the largest
  timestamp in the segment up to and including the batch at relative_offset. Taken at the same
  points as the offset index when the timestamp grew, plus a final entry for the segment's
  largest timestamp when it is sealed. Both columns non-decreasing.

Relative offsets are ``offset - segment base offset``; the log rolls before one would overflow
int32. Lookups binary-search the file with ``os.pread``: entries stay in the page cache, never
in Python objects, so memory does not grow with the amount of data stored. The file's descriptor
is borrowed from the broker's :class:`~pafka.storage.files.FileCache` for each read, so an index
holds none while idle (Kafka's lazy index loading). The active segment's indexes are written
through :mod:`pafka.storage.active_index`.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from pafka.storage.files import FileHandle

OFFSET_ENTRY = struct.Struct(">ii")  # relative_offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative_offset


class SparseIndex:
    """A file of fixed-size (key, value) entries with sorted keys, read-only."""

    __slots__ = ("_entry", "entries", "file")

    def __init__(self, file: FileHandle, entry: struct.Struct, size: int) -> None:
        self.file = file
        self._entry = entry
        self.entries = size // entry.size

    @property
    def entry_size(self) -> int:
        return self._entry.size

    def entry(self, i: int) -> tuple[int, int]:
        data = os.pread(self.file.fd(), self._entry.size, i * self._entry.size)
        if len(data) != self._entry.size:
            raise OSError(f"short read of entry {i} of {self.file.path}")
        key, value = self._entry.unpack(data)
        return int(key), int(value)

    def last(self) -> tuple[int, int] | None:
        return self.entry(self.entries - 1) if self.entries else None

    def floor(self, key: int) -> tuple[int, int] | None:
        """The last entry whose key is <= ``key``."""
        return self.floor_between(key, 0, self.entries - 1)

    def floor_between(self, key: int, lo: int, hi: int) -> tuple[int, int] | None:
        """The last entry among ``lo..hi`` (inclusive) whose key is <= ``key``."""
        found = None
        while lo <= hi:
            mid = (lo + hi) // 2
            entry = self.entry(mid)
            if entry[0] <= key:
                found = entry
                lo = mid + 1
            else:
                hi = mid - 1
        return found


def last_entry_of(path: Path, entry: struct.Struct, size: int) -> tuple[int, int] | None:
    """The last whole entry of an index file of ``size`` bytes, read with a descriptor of its own:
    opening thousands of segments at start-up must not churn the broker's file cache."""
    whole = size - size % entry.size
    if whole < entry.size:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.pread(fd, entry.size, whole - entry.size)
    finally:
        os.close(fd)
    if len(data) != entry.size:
        raise OSError(f"short read of the last entry of {path}")
    key, value = entry.unpack(data)
    return int(key), int(value)


def index_looks_sane(
    index_size: int, time_size: int, last_position: int | None, log_size: int
) -> bool:
    """Kafka's sanity check: whole entries, and the last entry points inside the log."""
    if index_size % OFFSET_ENTRY.size or time_size % TIME_ENTRY.size:
        return False
    if log_size and not index_size:
        return False
    return last_position is None or last_position < log_size
