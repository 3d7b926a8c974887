"""Reading a segment file front to back, batch by batch, in large throttled reads.

The cleaner reads whole logs: it opens its own descriptors (a sealed segment's cached one may
be closed by another thread at any moment) and reads ``buffer_bytes`` at a time, so a segment
costs a few system calls per megabyte instead of one per batch. A batch larger than the buffer
is read on its own. Only batches that are whole and within the size the caller saw are
returned; anything else is a :class:`CorruptMessageError`, since the cleaner reads only below
the high watermark, where every batch was validated on its way in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from pafka.errors import CorruptMessageError
from pafka.records.batch import HEADER_SIZE, MIN_BATCH_LENGTH, BatchHeader, read_header
from pafka.storage.throttle import Throttle


def scan_batches(
    fd: int, size: int, buffer_bytes: int, throttle: Throttle | None = None
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """(header, whole batch bytes) of every batch in the first ``size`` bytes of ``fd``."""
    position = 0
    while position < size:
        chunk = os.pread(fd, min(buffer_bytes, size - position), position)
        if throttle is not None:
            throttle.account(len(chunk))
        view = memoryview(chunk)
        used = 0
        while used + HEADER_SIZE <= len(view):
            header = read_header(view, used)
            if header.batch_length < MIN_BATCH_LENGTH or position + used + header.size > size:
                raise CorruptMessageError(f"torn batch at byte {position + used}")
            if used + header.size > len(view):
                break
            yield header, view[used : used + header.size]
            used += header.size
        if used == 0:
            # One batch larger than the buffer (or a header cut by the chunk's end).
            header = read_header(os.pread(fd, HEADER_SIZE, position))
            if header.batch_length < MIN_BATCH_LENGTH or position + header.size > size:
                raise CorruptMessageError(f"torn batch at byte {position}")
            batch = os.pread(fd, header.size, position)
            if len(batch) != header.size:
                raise CorruptMessageError(f"short read of the batch at byte {position}")
            if throttle is not None:
                throttle.account(len(batch))
            yield header, memoryview(batch)
            used = header.size
        position += used


def scan_headers(fd: int, size: int) -> Iterator[BatchHeader]:
    """The header of every batch in the first ``size`` bytes of ``fd``, read header by header:
    the records themselves are never read."""
    position = 0
    while position + HEADER_SIZE <= size:
        header = read_header(os.pread(fd, HEADER_SIZE, position))
        if header.batch_length < MIN_BATCH_LENGTH or position + header.size > size:
            raise CorruptMessageError(f"torn batch at byte {position}")
        yield header
        position += header.size
