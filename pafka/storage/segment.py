"""Log segments: a ``.log`` file of whole record batches and its two sparse indexes.

:class:`Segment` is sealed and read-only; its descriptors, the log's and the indexes', are
borrowed from the broker's :class:`~pafka.storage.files.FileCache` for each read, so a sealed
segment holds none while idle. The one segment of a log that is appended to is an
:class:`~pafka.storage.active_segment.ActiveSegment`, which becomes a :class:`Segment` when the
log rolls. Batches are written exactly as given; reads return whole batches sliced straight from
the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from pafka.errors import CorruptMessageError, KafkaApiError
from pafka.records.batch import HEADER_SIZE, MIN_BATCH_LENGTH, BatchHeader, read_header
from pafka.records.encoding import decode_records
from pafka.storage import layout
from pafka.storage.files import CachedFile, FileCache, FileHandle
from pafka.storage.index import OFFSET_ENTRY, TIME_ENTRY, SparseIndex, last_entry_of
from pafka.storage.region import FileRegion


class Segment:
    """A sealed segment: batches ``[base_offset, next_offset)``, never written again."""

    __slots__ = (
        "base_offset",
        "created_ms",
        "directory",
        "log",
        "max_timestamp",
        "max_timestamp_offset",
        "next_offset",
        "offset_index",
        "size",
        "time_index",
    )

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        log: FileHandle,
        offset_index: SparseIndex,
        time_index: SparseIndex,
        size: int,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.size = size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.max_timestamp_offset = base_offset
        self.created_ms = 0

    @classmethod
    def open_sealed(
        cls, directory: Path, base_offset: int, next_offset: int, files: FileCache
    ) -> Segment:
        """A sealed segment whose files were checked, without holding a descriptor open."""
        paths = layout.segment_files(directory, base_offset)
        log_size, index_size, time_size = (p.stat().st_size for p in paths)
        segment = cls(
            directory,
            base_offset,
            CachedFile(paths[0], files),
            SparseIndex(CachedFile(paths[1], files), OFFSET_ENTRY, index_size),
            SparseIndex(CachedFile(paths[2], files), TIME_ENTRY, time_size),
            log_size,
        )
        segment.next_offset = next_offset
        last_time = last_entry_of(paths[2], TIME_ENTRY, time_size)
        if last_time is not None:
            segment.max_timestamp = last_time[0]
            segment.max_timestamp_offset = base_offset + last_time[1]
        segment.created_ms = segment.max_timestamp
        return segment

    @property
    def log_path(self) -> Path:
        return self.log.path

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    def pread(self, size: int, position: int) -> bytes:
        return os.pread(self.log.fd(), size, position)

    def header_at(self, position: int) -> BatchHeader:
        return read_header(self.pread(HEADER_SIZE, position))

    def close(self) -> None:
        for handle in (self.log, self.offset_index.file, self.time_index.file):
            handle.close()

    def delete(self) -> None:
        self.close()
        # The txn index first: one left without its log would be taken for a merged segment's
        # (txn_index.adopt_orphans).
        layout.txn_index_file(self.directory, self.base_offset).unlink(missing_ok=True)
        for path in layout.segment_files(self.directory, self.base_offset):
            path.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------------

    def iter_headers(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        pos = start
        while pos + HEADER_SIZE <= self.size:
            header = self.header_at(pos)
            yield pos, header
            pos += header.size

    def position_of(self, offset: int, *, exact_base: bool = False) -> int | None:
        """File position of the batch holding ``offset`` (or, with ``exact_base``, of the first
        batch starting at or after it); None when past the end."""
        entry = self.offset_index.floor(offset - self.base_offset)
        for pos, header in self.iter_headers(entry[1] if entry else 0):
            if (header.base_offset >= offset) if exact_base else (header.last_offset >= offset):
                return pos
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``: at least one, then up to max_bytes;
        none whose base offset is at or past ``max_offset``."""
        start = self.position_of(offset)
        if start is None:
            return b""
        chunk = self.pread(max(max_bytes, HEADER_SIZE), start)
        first = read_header(chunk)
        if max_offset is not None and first.base_offset >= max_offset:
            return b""
        if first.size > len(chunk):
            return self.pread(first.size, start)
        end = 0
        while end + HEADER_SIZE <= len(chunk):
            header = read_header(chunk, end)
            if end + header.size > len(chunk):
                break
            if max_offset is not None and header.base_offset >= max_offset:
                break
            end += header.size
        if end == len(chunk):
            return chunk
        # A view, not a copy: fetch responses copy the bytes once, into the frame.
        return memoryview(chunk)[:end]

    def extent(self, offset: int, max_bytes: int, max_offset: int | None) -> tuple[int, int]:
        """(position, length) of exactly the bytes :meth:`read` returns, found from the batch
        headers alone, so that the records themselves need not be read into memory."""
        start = self.position_of(offset)
        if start is None:
            return 0, 0
        limit = min(max(max_bytes, HEADER_SIZE), self.size - start)
        first = self.header_at(start)
        if max_offset is not None and first.base_offset >= max_offset:
            return start, 0
        if first.size > limit:
            return start, first.size
        if self.size - start == limit and (max_offset is None or self.next_offset <= max_offset):
            return start, limit  # the rest of the segment: whole batches, all below max_offset
        # Batches before an indexed one that starts within the limit are all taken: skip them.
        end = max(first.size, self._indexed_batch_within(start + limit, max_offset) - start)
        while end + HEADER_SIZE <= limit:
            header = self.header_at(start + end)
            if end + header.size > limit:
                break
            if max_offset is not None and header.base_offset >= max_offset:
                break
            end += header.size
        return start, end

    def _indexed_batch_within(self, position_limit: int, max_offset: int | None) -> int:
        """Position of the last indexed batch starting at or before ``position_limit`` whose
        base offset is below ``max_offset`` (0 if none): positions and offsets both grow."""
        index = self.offset_index
        lo, hi, found = 0, index.entries - 1, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            relative, position = index.entry(mid)
            below = max_offset is None or self.base_offset + relative < max_offset
            if position <= position_limit and below:
                found = position
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def read_for_send(
        self, offset: int, max_bytes: int, max_offset: int | None, min_region_bytes: int
    ) -> bytes | FileRegion:
        """What :meth:`read` returns, as a file region when it is ``min_region_bytes`` or more."""
        start, length = self.extent(offset, max_bytes, max_offset)
        if length == 0:
            return b""
        if length < min_region_bytes:
            return self.pread(length, start)
        return FileRegion.of(self.log.fd(), start, length)

    def find_timestamp(self, timestamp_ms: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``min_offset`` (the log start)
        whose timestamp >= the target; at batch granularity (batch max timestamp, base offset)
        when the batch cannot be decoded."""
        if self.max_timestamp < timestamp_ms:
            return None
        entry = self.time_index.floor(timestamp_ms - 1)
        start = self.position_of(self.base_offset + entry[1]) if entry else 0
        for pos, header in self.iter_headers(start or 0):
            if (
                header.max_timestamp < timestamp_ms
                or header.records_count == 0  # a producer's last batch, emptied by a clean
                or header.last_offset < min_offset
            ):
                continue
            try:
                for record in decode_records(self.pread(header.size, pos)):
                    if record.timestamp >= timestamp_ms and record.offset >= min_offset:
                        return record.timestamp, record.offset
            except KafkaApiError:
                return header.max_timestamp, max(header.base_offset, min_offset)
            if header.is_control and header.base_offset >= min_offset:
                return header.max_timestamp, header.base_offset  # its one record, not decoded
            # Every match lies below the log start (or a clean left a gap): the next batch.
        return None


def check_batch_bounds(segment: Segment, position: int, header: BatchHeader) -> None:
    """A batch read back from disk must be whole and continue the segment's offsets."""
    if header.batch_length < MIN_BATCH_LENGTH or position + header.size > segment.size:
        raise CorruptMessageError(f"torn batch at byte {position} of {segment.log_path}")
    if header.base_offset < segment.next_offset or header.last_offset_delta < 0:
        raise CorruptMessageError(f"offsets go backwards at byte {position} of {segment.log_path}")
