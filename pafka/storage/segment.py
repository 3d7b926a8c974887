"""Log segments: a ``.log`` file of whole record batches and its two sparse indexes.

:class:`Segment` is sealed and read-only; its descriptors are borrowed from the broker's
:class:`~pafka.storage.files.FileCache`. :class:`ActiveSegment` is the one segment of a log that
is appended to; it owns read-write descriptors and becomes a :class:`Segment` when the log
rolls (:meth:`ActiveSegment.seal`). Batches are written exactly as given; reads return whole
batches sliced straight from the file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from pafka.errors import CorruptMessageError, InvalidRecordError, KafkaApiError
from pafka.records.batch import HEADER_SIZE, MIN_BATCH_LENGTH, BatchHeader, check_batch, read_header
from pafka.records.encoding import decode_records
from pafka.storage import layout
from pafka.storage.files import CachedFile, FileCache, FileHandle, OwnedFile
from pafka.storage.index import OFFSET_ENTRY, TIME_ENTRY, SparseIndex
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
        sizes = [
            p.stat().st_size
            for p in (
                layout.log_file(directory, base_offset),
                layout.index_file(directory, base_offset),
                layout.time_index_file(directory, base_offset),
            )
        ]
        segment = cls(
            directory,
            base_offset,
            CachedFile(layout.log_file(directory, base_offset), files),
            SparseIndex(
                CachedFile(layout.index_file(directory, base_offset), files), OFFSET_ENTRY, sizes[1]
            ),
            SparseIndex(
                CachedFile(layout.time_index_file(directory, base_offset), files),
                TIME_ENTRY,
                sizes[2],
            ),
            sizes[0],
        )
        segment.next_offset = next_offset
        last_time = segment.time_index.last()
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

    def find_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record whose timestamp >= the target; at batch
        granularity (batch max timestamp, base offset) when the batch cannot be decoded."""
        if self.max_timestamp < timestamp_ms:
            return None
        entry = self.time_index.floor(timestamp_ms - 1)
        start = self.position_of(self.base_offset + entry[1]) if entry else 0
        for pos, header in self.iter_headers(start or 0):
            if header.max_timestamp < timestamp_ms:
                continue
            try:
                for record in decode_records(self.pread(header.size, pos)):
                    if record.timestamp >= timestamp_ms:
                        return record.timestamp, record.offset
            except KafkaApiError:
                pass
            return header.max_timestamp, header.base_offset
        return None


class ActiveSegment(Segment):
    """The segment a log appends to."""

    __slots__ = ("_bytes_since_index", "index_interval_bytes")

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        log = OwnedFile(layout.log_file(directory, base_offset))
        offset_file = OwnedFile(layout.index_file(directory, base_offset))
        time_file = OwnedFile(layout.time_index_file(directory, base_offset))
        super().__init__(
            directory,
            base_offset,
            log,
            SparseIndex(offset_file, OFFSET_ENTRY, os.fstat(offset_file.fd()).st_size),
            SparseIndex(time_file, TIME_ENTRY, os.fstat(time_file.fd()).st_size),
            os.fstat(log.fd()).st_size,
        )
        self.index_interval_bytes = index_interval_bytes
        self._bytes_since_index = 0

    def note(self, position: int, header: BatchHeader) -> None:
        """Account for a batch written at ``position``: offsets, timestamps, index entries."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.max_timestamp_offset = header.base_offset
        if not self.offset_index.entries or self._bytes_since_index >= self.index_interval_bytes:
            relative = header.base_offset - self.base_offset
            self.offset_index.append(relative, position)
            last_time = self.time_index.last()
            if last_time is None or self.max_timestamp > last_time[0]:
                self.time_index.append(self.max_timestamp, relative)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        self.next_offset = header.next_offset

    def append(self, data: bytes, headers: list[tuple[int, BatchHeader]], now_ms: int) -> None:
        """Write batches whose offsets are already assigned; ``headers`` positions are relative."""
        start = self.size
        written = os.pwrite(self.log.fd(), data, start)
        if written != len(data):
            os.ftruncate(self.log.fd(), start)
            raise OSError(f"short write to {self.log_path}")
        if not self.size:
            self.created_ms = now_ms
        self.size += len(data)
        for pos, header in headers:
            self.note(start + pos, header)

    def reset_state(self) -> None:
        """Forget everything derived from the data (before a rescan)."""
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.max_timestamp_offset = self.base_offset
        self._bytes_since_index = 0

    def truncate_bytes(self, size: int) -> None:
        os.ftruncate(self.log.fd(), size)
        self.size = size

    def truncate_to(self, offset: int) -> None:
        """Drop every batch whose base offset is >= ``offset``."""
        position = self.position_of(offset, exact_base=True)
        if position is None:
            return
        self.truncate_bytes(position)
        self.load(check_crc=False, rebuild_indexes=False)

    def load(self, *, check_crc: bool, rebuild_indexes: bool) -> bool:
        """Derive offsets, timestamps and missing index entries from the file; True when every
        batch was whole and valid, False when a torn or corrupt tail was cut off.

        Without ``rebuild_indexes`` the index entries are trusted and only batches after the
        last one are read; with ``check_crc`` those batches' CRCs are verified too.
        """
        self.reset_state()
        start = 0
        if rebuild_indexes:
            self.offset_index.truncate_entries(0)
            self.time_index.truncate_entries(0)
        else:
            self.offset_index.truncate_values_from(self.size)
            last = self.offset_index.last()
            start = last[1] if last else 0
            self.time_index.truncate_values_from(last[0] + 1 if last else 0)
            last_time = self.time_index.last()
            if last_time is not None:
                self.max_timestamp = last_time[0]
                self.max_timestamp_offset = self.base_offset + last_time[1]
        position = start
        intact = True
        try:
            for pos, header in self.iter_headers(start):
                check_batch_bounds(self, pos, header)
                if check_crc:
                    check_batch(self.pread(header.size, pos), 0, header)
                if pos == start and self.offset_index.entries:
                    self._resume_at(header)
                else:
                    self.note(pos, header)
                position = pos + header.size
        except (CorruptMessageError, InvalidRecordError):
            intact = False
        if position < self.size:
            intact = False
            self.truncate_bytes(position)
        if self.size and self.created_ms <= 0:
            first = self.header_at(0).max_timestamp
            self.created_ms = first if first > 0 else int(time.time() * 1000)
        return intact

    def _resume_at(self, header: BatchHeader) -> None:
        """State after the already-indexed batch at the last offset index entry."""
        self.next_offset = header.next_offset
        self._bytes_since_index = header.size
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.max_timestamp_offset = header.base_offset

    def finish_time_index(self) -> None:
        """Record the segment's largest timestamp in the time index (Kafka does on roll)."""
        last_time = self.time_index.last()
        if self.max_timestamp >= 0 and (last_time is None or self.max_timestamp > last_time[0]):
            self.time_index.append(self.max_timestamp, self.max_timestamp_offset - self.base_offset)

    def sync_handle(self) -> int:
        """A duplicate descriptor of the log file, to fsync later even if the segment closes."""
        return os.dup(self.log.fd())

    def flush(self) -> None:
        os.fsync(self.log.fd())
        os.fsync(self.offset_index.file.fd())
        os.fsync(self.time_index.file.fd())

    def seal(self, files: FileCache) -> Segment:
        """Close this segment for writing and return it as a sealed, read-only segment."""
        self.finish_time_index()
        self.close()
        sealed = Segment.open_sealed(self.directory, self.base_offset, self.next_offset, files)
        sealed.max_timestamp = self.max_timestamp
        sealed.max_timestamp_offset = self.max_timestamp_offset
        sealed.created_ms = self.created_ms
        return sealed


def check_batch_bounds(segment: Segment, position: int, header: BatchHeader) -> None:
    """A batch read back from disk must be whole and continue the segment's offsets."""
    if header.batch_length < MIN_BATCH_LENGTH or position + header.size > segment.size:
        raise CorruptMessageError(f"torn batch at byte {position} of {segment.log_path}")
    if header.base_offset < segment.next_offset or header.last_offset_delta < 0:
        raise CorruptMessageError(f"offsets go backwards at byte {position} of {segment.log_path}")
