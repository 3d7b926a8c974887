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
in Python objects, so memory does not grow with the amount of data stored.
"""

from __future__ import annotations

import os
import struct

from pafka.storage.files import FileHandle

OFFSET_ENTRY = struct.Struct(">ii")  # relative_offset, position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative_offset


class SparseIndex:
    """A file of fixed-size (key, value) entries with sorted keys."""

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
        lo, hi = 0, self.entries - 1
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

    # -- writing (the active segment's indexes only) -----------------------------------------------

    def append(self, key: int, value: int) -> None:
        os.pwrite(self.file.fd(), self._entry.pack(key, value), self.entries * self._entry.size)
        self.entries += 1

    def truncate_entries(self, count: int) -> None:
        os.ftruncate(self.file.fd(), count * self._entry.size)
        self.entries = count

    def truncate_values_from(self, value: int) -> None:
        """Drop the trailing entries whose value is >= ``value``."""
        keep = self.entries
        while keep and self.entry(keep - 1)[1] >= value:
            keep -= 1
        if keep != self.entries:
            self.truncate_entries(keep)


def index_looks_sane(
    index_size: int, time_size: int, last_position: int | None, log_size: int
) -> bool:
    """Kafka's sanity check: whole entries, and the last entry points inside the log."""
    if index_size % OFFSET_ENTRY.size or time_size % TIME_ENTRY.size:
        return False
    if log_size and not index_size:
        return False
    return last_position is None or last_position < log_size
