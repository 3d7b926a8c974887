"""A byte range of a segment file, to be sent to a socket without passing through Python.

A Fetch response's record set can be sent with ``sendfile`` straight from the page cache. The
region holds its own duplicate of the segment's descriptor: retention deleting the segment or a
roll closing it before the bytes are sent leaves the inode, and so the bytes, reachable.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from pafka.errors import KafkaStorageError


class FileRegion:
    """``length`` bytes at ``offset`` of an open file; owns its descriptor until closed."""

    __slots__ = ("_fd", "length", "offset")

    def __init__(self, fd: int, offset: int, length: int) -> None:
        if offset < 0 or length < 0:
            raise ValueError(f"bad file region: offset {offset}, length {length}")
        self._fd = fd
        self.offset = offset
        self.length = length

    @classmethod
    def of(cls, fd: int, offset: int, length: int) -> FileRegion:
        """A region of a file whose descriptor ``fd`` the caller keeps (it is duplicated)."""
        return cls(os.dup(fd), offset, length)

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"FileRegion(fd={self._fd}, offset={self.offset}, length={self.length})"

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        if self._fd < 0:
            raise KafkaStorageError("file region already closed")
        return self._fd

    def read(self, start: int = 0) -> bytes:
        """The region's bytes from ``start`` (relative) to its end, read into memory."""
        want = self.length - start
        data = os.pread(self.fileno(), want, self.offset + start)
        if len(data) != want:
            # Only a truncation (a leader turned follower) shortens bytes already served.
            raise KafkaStorageError(f"file region shrank: {len(data)} of {want} bytes left")
        return data

    def read_into(self, target: memoryview, start: int = 0) -> None:
        """Fill ``target`` with the region's bytes from ``start`` (relative): one copy, no
        allocation."""
        want = len(target)
        if start + want > self.length:
            raise ValueError(f"{want} bytes from {start} are past the region's {self.length}")
        done = 0
        while done < want:
            got = os.preadv(self.fileno(), [target[done:]], self.offset + start + done)
            if got == 0:
                raise KafkaStorageError(f"file region shrank: {done} of {want} bytes left")
            done += got

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __del__(self) -> None:
        # The safety net for a response dropped on an unusual path (a handler cancelled, an
        # encoding failure): the descriptor must not outlive the region.
        self.close()


def close_regions(pieces: Iterable[object]) -> None:
    for piece in pieces:
        if isinstance(piece, FileRegion):
            piece.close()
