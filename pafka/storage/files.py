"""File descriptors of segment files: owned by the active segment, borrowed from an LRU otherwise.

A broker with thousands of partitions must not keep three descriptors open per segment. The
active segment of each log owns one read-write descriptor, its log file's (its indexes open their
files only to write them, :mod:`pafka.storage.active_index`); every other read, of sealed
segments' logs and of any index, borrows a read-only descriptor from a :class:`FileCache` shared
by all logs of a broker, which closes the least recently used one beyond its capacity. An idle
partition so costs one descriptor, and the whole broker ``partitions + capacity``.

Callers fetch a descriptor immediately before each system call (``os.pread(f.fd(), ...)``) and
never keep it across another fetch, so an evicted descriptor is never used.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

DEFAULT_OPEN_FILES = 512


class FileHandle(Protocol):
    path: Path

    def fd(self) -> int: ...

    def close(self) -> None: ...


class OwnedFile:
    """A descriptor opened read-write for the life of the object (the active segment's log)."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def fd(self) -> int:
        if self._fd < 0:
            raise OSError(f"{self.path} is closed")
        return self._fd

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class FileCache:
    """Read-only descriptors of sealed segment files, at most ``capacity`` open at once."""

    def __init__(self, capacity: int = DEFAULT_OPEN_FILES) -> None:
        self.capacity = max(capacity, 4)
        self._open: OrderedDict[Path, int] = OrderedDict()
        self._lock = threading.Lock()

    def fd(self, path: Path) -> int:
        with self._lock:
            fd = self._open.get(path)
            if fd is not None:
                self._open.move_to_end(path)
                return fd
            fd = os.open(path, os.O_RDONLY)
            self._open[path] = fd
            while len(self._open) > self.capacity:
                _, evicted = self._open.popitem(last=False)
                os.close(evicted)
            return fd

    def forget(self, path: Path) -> None:
        with self._lock:
            fd = self._open.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close_all(self) -> None:
        with self._lock:
            fds = list(self._open.values())
            self._open.clear()
        for fd in fds:
            os.close(fd)

    def __len__(self) -> int:
        return len(self._open)


class CachedFile:
    """A sealed file whose descriptor comes from a :class:`FileCache` when needed."""

    __slots__ = ("_cache", "path")

    def __init__(self, path: Path, cache: FileCache) -> None:
        self.path = path
        self._cache = cache

    def fd(self) -> int:
        return self._cache.fd(self.path)

    def close(self) -> None:
        self._cache.forget(self.path)
