"""Sparse segment indexes: offset → file position and timestamp → offset.

Entry layouts (big-endian, fixed size so an entry is found by arithmetic):

* ``.index``: relative_offset int32 | position int32, one entry per ``index.interval.bytes``
  of log appended, both columns increasing;
* ``.timeindex``: timestamp int64 | relative_offset int32, appended when a batch raises the
  segment's largest timestamp, both columns non-decreasing.

Lookups binary-search the file with ``os.pread``: entries stay in the page cache, never in
Python objects, so memory does not grow with the amount of data stored.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class SparseIndex:
    """An append-only file of fixed-size (key, value) entries with sorted keys."""

    def __init__(self, path: Path, entry: struct.Struct) -> None:
        self.path = path
        self._entry = entry
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        # A torn last entry (crash mid-write) is dropped.
        self.entries = size // entry.size
        if size % entry.size:
            os.ftruncate(self._fd, self.entries * entry.size)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def entry(self, i: int) -> tuple[int, int]:
        data = os.pread(self._fd, self._entry.size, i * self._entry.size)
        key, value = self._entry.unpack(data)
        return int(key), int(value)

    def last(self) -> tuple[int, int] | None:
        return self.entry(self.entries - 1) if self.entries else None

    def append(self, key: int, value: int) -> None:
        os.pwrite(self._fd, self._entry.pack(key, value), self.entries * self._entry.size)
        self.entries += 1

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

    def truncate_keys_from(self, key: int) -> None:
        """Drop entries whose key is >= ``key``."""
        keep = self.entries
        while keep and self.entry(keep - 1)[0] >= key:
            keep -= 1
        self.truncate_entries(keep)

    def truncate_values_from(self, value: int) -> None:
        """Drop entries whose value is >= ``value``."""
        keep = self.entries
        while keep and self.entry(keep - 1)[1] >= value:
            keep -= 1
        self.truncate_entries(keep)

    def truncate_entries(self, count: int) -> None:
        os.ftruncate(self._fd, count * self._entry.size)
        self.entries = count

    def flush(self) -> None:
        os.fsync(self._fd)
