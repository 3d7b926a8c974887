"""The active segment's sparse indexes: the newest entries in memory, the older ones on disk.

An idle partition should cost one descriptor, its active segment's log file. Holding the two
index files open read-write as well would triple that, so an appendable index keeps the entries
appended since it last spilled in a ``bytearray`` laid out exactly like the file, and writes them
with a descriptor opened for that one write: when :data:`TAIL_ENTRIES` have accumulated (about
a megabyte of log at the default ``index.interval.bytes``), when the log is flushed, and when the
segment is sealed. Older entries are read like a sealed index's, with a descriptor borrowed from
the broker's :class:`~pafka.storage.files.FileCache`. Lookups near the log end, the common case,
stay in memory.

Crash safety: the file only ever holds a prefix of the index (a truncation cuts the file before
the memory), so after a crash it is short, never wrong; after an unclean shutdown recovery
rebuilds the active segment's indexes from the log anyway (:mod:`pafka.storage.recovery`).

Threads: every change happens under the log's lock. Spilling (which moves entries out of memory)
happens only on the appending thread, which is also the only reader; a flush on a worker thread
only copies memory to the file, changing nothing a reader looks at.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from pafka.storage.files import CachedFile, FileCache
from pafka.storage.index import SparseIndex

TAIL_ENTRIES = 256


class AppendableIndex(SparseIndex):
    """Entries ``[0, spilled)`` only in the file; ``[spilled, entries)`` in memory, of which
    ``[spilled, on_disk)`` are also in the file already."""

    __slots__ = ("_on_disk", "_spilled", "_tail", "path")

    def __init__(self, path: Path, files: FileCache, entry: struct.Struct) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        super().__init__(CachedFile(path, files), entry, size)
        self.path = path
        self._spilled = self._on_disk = self.entries
        self._tail = bytearray()

    @property
    def tail_entries(self) -> int:
        """Entries held in memory."""
        return self.entries - self._spilled

    def entry(self, i: int) -> tuple[int, int]:
        if i < self._spilled:
            return super().entry(i)
        key, value = self._entry.unpack_from(self._tail, (i - self._spilled) * self._entry.size)
        return int(key), int(value)

    def floor(self, key: int) -> tuple[int, int] | None:
        # Most lookups are near the log end: answer from memory when the tail covers the key.
        if self._tail and self._entry.unpack_from(self._tail)[0] <= key:
            return self.floor_between(key, self._spilled, self.entries - 1)
        return self.floor_between(key, 0, self._spilled - 1)

    def append(self, key: int, value: int) -> None:
        self._tail += self._entry.pack(key, value)
        self.entries += 1

    def truncate_entries(self, count: int) -> None:
        if count < self._on_disk:
            os.truncate(self.path, count * self._entry.size)
            self._on_disk = count
        if count < self._spilled:
            self._spilled = count
            self._tail = bytearray()
        else:
            del self._tail[(count - self._spilled) * self._entry.size :]
        self.entries = count

    def truncate_values_from(self, value: int) -> None:
        """Drop the trailing entries whose value is >= ``value``."""
        keep = self.entries
        while keep and self.entry(keep - 1)[1] >= value:
            keep -= 1
        if keep != self.entries:
            self.truncate_entries(keep)

    def write_through(self) -> None:
        """Write the entries the file lacks; they stay in memory too."""
        if self._on_disk >= self.entries:
            return
        data = self._tail[(self._on_disk - self._spilled) * self._entry.size :]
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if os.pwrite(fd, data, self._on_disk * self._entry.size) != len(data):
                raise OSError(f"short write to {self.path}")
        finally:
            os.close(fd)
        self._on_disk = self.entries

    def spill(self) -> None:
        """Write the tail out and forget it, except the last entry (read on every append)."""
        self.write_through()
        if self.entries - self._spilled > 1:
            del self._tail[: -self._entry.size]
            self._spilled = self.entries - 1

    def sync_handle(self) -> int:
        """A descriptor of the file with every entry written, for the caller to fsync and close."""
        self.write_through()
        return os.open(self.path, os.O_RDONLY)
