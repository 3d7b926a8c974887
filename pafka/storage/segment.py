"""One log segment: a ``.log`` file of whole record batches and its two sparse indexes.

Only the last segment of a log is appended to; a segment is sealed when the log rolls. Batches
are written exactly as given; reads return whole batches sliced straight from the file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import HEADER_SIZE, BatchHeader, crc_of, read_header
from pafka.storage import layout
from pafka.storage.index import OFFSET_ENTRY, TIME_ENTRY, SparseIndex

SCAN_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ScanResult:
    valid_bytes: int
    next_offset: int
    max_timestamp: int
    truncated: bool


class Segment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = layout.log_file(directory, base_offset)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.offset_index = SparseIndex(layout.index_file(directory, base_offset), OFFSET_ENTRY)
        self.time_index = SparseIndex(layout.time_index_file(directory, base_offset), TIME_ENTRY)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.created_ms = int(time.time() * 1000)
        self._bytes_since_index = 0

    # -- recovery ------------------------------------------------------------------------------

    def load(self, *, validate: bool) -> ScanResult:
        """Find the segment's end; with ``validate`` check every CRC and rebuild the indexes.

        Without ``validate`` (after a clean shutdown) only the tail after the last index entry
        is read. A torn or corrupt tail is cut off either way.
        """
        start = 0
        last_offset_entry = self.offset_index.last()
        if validate or last_offset_entry is None:
            self.offset_index.truncate_entries(0)
            self.time_index.truncate_entries(0)
        else:
            start = last_offset_entry[1]
            last_time = self.time_index.last()
            if last_time is not None:
                self.max_timestamp = last_time[0]
        self.next_offset = self.base_offset
        position = start
        truncated = False
        self._bytes_since_index = 0
        try:
            for pos, header in self._scan(start, validate):
                if validate or pos > start or last_offset_entry is None:
                    self._index_batch(pos, header)
                self._note(header)
                position = pos + header.size
        except (CorruptMessageError, InvalidRecordError):
            truncated = True
        if position < self.size:
            truncated = True
            self.truncate_bytes(position)
        if self.offset_index.entries == 0 and self.size and not validate:
            return self.load(validate=True)
        return ScanResult(self.size, self.next_offset, self.max_timestamp, truncated)

    def _scan(self, start: int, validate: bool) -> Iterator[tuple[int, BatchHeader]]:
        pos = start
        while pos + HEADER_SIZE <= self.size:
            header = read_header(os.pread(self._fd, HEADER_SIZE, pos))
            if header.batch_length < HEADER_SIZE - 12 or pos + header.size > self.size:
                raise CorruptMessageError(f"torn batch at byte {pos} of {self.log_path}")
            if header.base_offset < self.next_offset or header.last_offset_delta < 0:
                raise CorruptMessageError(f"offsets go backwards at byte {pos}")
            if validate:
                batch = os.pread(self._fd, header.size, pos)
                if crc_of(batch, 0, header) != header.crc:
                    raise CorruptMessageError(f"CRC mismatch at byte {pos} of {self.log_path}")
            yield pos, header
            pos += header.size

    def _note(self, header: BatchHeader) -> None:
        self.next_offset = header.next_offset
        self.max_timestamp = max(self.max_timestamp, header.max_timestamp)

    def _index_batch(self, position: int, header: BatchHeader) -> None:
        if position == 0 or self._bytes_since_index >= self.index_interval_bytes:
            self.offset_index.append(header.base_offset - self.base_offset, position)
            last_time = self.time_index.last()
            if last_time is None or header.max_timestamp > last_time[0]:
                self.time_index.append(header.max_timestamp, header.base_offset - self.base_offset)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size

    # -- writing -------------------------------------------------------------------------------

    def append(self, data: bytes, headers: list[tuple[int, BatchHeader]]) -> None:
        """Write batches whose offsets are already assigned; ``headers`` positions are relative."""
        start = self.size
        written = os.pwrite(self._fd, data, start)
        if written != len(data):
            raise OSError(f"short write to {self.log_path}")
        self.size += len(data)
        for pos, header in headers:
            self._index_batch(start + pos, header)
            self._note(header)

    def truncate_bytes(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self.size = size

    def truncate_to(self, offset: int) -> None:
        """Drop every batch whose base offset is >= ``offset``."""
        position = self.position_of(offset, exact_base=True)
        if position is None:
            return
        self.truncate_bytes(position)
        self.offset_index.truncate_values_from(position)
        self.time_index.truncate_values_from(offset - self.base_offset)
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        last = self.offset_index.last()
        for _, header in self._scan(last[1] if last else 0, False):
            self._note(header)
        time_last = self.time_index.last()
        if time_last is not None:
            self.max_timestamp = max(self.max_timestamp, time_last[0])

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()

    def close(self) -> None:
        os.close(self._fd)
        self.offset_index.close()
        self.time_index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            path.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------------

    def position_of(self, offset: int, *, exact_base: bool = False) -> int | None:
        """File position of the batch holding ``offset`` (or, with ``exact_base``, of the first
        batch starting at or after it); None when past the end."""
        entry = self.offset_index.floor(offset - self.base_offset)
        pos = entry[1] if entry else 0
        while pos + HEADER_SIZE <= self.size:
            header = read_header(os.pread(self._fd, HEADER_SIZE, pos))
            if (exact_base and header.base_offset >= offset) or (
                not exact_base and header.last_offset >= offset
            ):
                return pos
            pos += header.size
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None) -> bytes | memoryview:
        """Whole batches from the one holding ``offset``: at least one, then up to max_bytes."""
        start = self.position_of(offset)
        if start is None:
            return b""
        chunk = os.pread(self._fd, max(max_bytes, HEADER_SIZE), start)
        first = read_header(chunk)
        if max_offset is not None and first.base_offset >= max_offset:
            return b""
        if first.size > len(chunk):
            return os.pread(self._fd, first.size, start)
        end = 0
        while end + HEADER_SIZE <= len(chunk):
            header = read_header(chunk, end)
            if end + header.size > len(chunk):
                break
            if max_offset is not None and header.base_offset >= max_offset:
                break
            end += header.size
        # A view, not a copy: fetch responses copy the bytes once, into the frame.
        return memoryview(chunk)[:end]

    def iter_headers(self) -> Iterator[tuple[int, BatchHeader]]:
        pos = 0
        while pos + HEADER_SIZE <= self.size:
            header = read_header(os.pread(self._fd, HEADER_SIZE, pos))
            yield pos, header
            pos += header.size

    def find_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(max_timestamp, base_offset) of the first batch whose max timestamp >= the target."""
        if self.max_timestamp < timestamp_ms:
            return None
        entry = self.time_index.floor(timestamp_ms - 1)
        start_offset = self.base_offset + (entry[1] if entry else 0)
        pos = self.position_of(start_offset) or 0
        while pos + HEADER_SIZE <= self.size:
            header = read_header(os.pread(self._fd, HEADER_SIZE, pos))
            if header.max_timestamp >= timestamp_ms:
                return header.max_timestamp, header.base_offset
            pos += header.size
        return None
