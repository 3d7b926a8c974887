"""The one segment of a log that is appended to.

It holds one descriptor, its ``.log`` file opened read-write; its two indexes keep their newest
entries in memory and open their files only to write them (:mod:`pafka.storage.active_index`),
so an idle partition costs one descriptor. When the log rolls, :meth:`ActiveSegment.seal`
writes the indexes out and returns the segment as a sealed :class:`~pafka.storage.segment.Segment`
whose descriptors are all borrowed from the broker's file cache.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import BatchHeader, check_batch
from pafka.storage import layout
from pafka.storage.active_index import TAIL_ENTRIES, AppendableIndex
from pafka.storage.files import FileCache, OwnedFile
from pafka.storage.index import OFFSET_ENTRY, TIME_ENTRY
from pafka.storage.segment import Segment, check_batch_bounds


class ActiveSegment(Segment):
    """The segment a log appends to."""

    __slots__ = ("_bytes_since_index", "index_interval_bytes", "written_back_to")

    offset_index: AppendableIndex
    time_index: AppendableIndex

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        index_interval_bytes: int,
        files: FileCache,
        paths: tuple[Path, Path, Path] | None = None,
    ) -> None:
        """``paths`` (log, index, time index) replace the segment's own names: the cleaner
        writes a new segment under its ``.cleaned`` names."""
        log_path, index_path, time_path = paths or layout.segment_files(directory, base_offset)
        log = OwnedFile(log_path)
        try:
            offset_index = AppendableIndex(index_path, files, OFFSET_ENTRY)
            time_index = AppendableIndex(time_path, files, TIME_ENTRY)
        except OSError:
            log.close()
            raise
        super().__init__(
            directory, base_offset, log, offset_index, time_index, os.fstat(log.fd()).st_size
        )
        self.index_interval_bytes = index_interval_bytes
        self._bytes_since_index = 0
        # Where the next step of incremental writeback starts (pafka.storage.writeback): what
        # the file held at open is on disk already (recovery synced what it checked).
        self.written_back_to = self.size

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
            if self.offset_index.tail_entries > TAIL_ENTRIES:
                self.spill_indexes()
        self._bytes_since_index += header.size
        self.next_offset = header.next_offset

    def spill_indexes(self) -> None:
        """Move the index entries held in memory to the files (all but each index's last)."""
        # The time index first: should a crash fall between the two writes, the time index on
        # disk covers at least the offset index's points, and recovery trims the excess.
        self.time_index.spill()
        self.offset_index.spill()

    def write_indexes(self) -> None:
        """Write every index entry still only in memory to the index files."""
        self.time_index.write_through()
        self.offset_index.write_through()

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

    def sync_handles(self) -> list[int]:
        """Descriptors of the log and its fully written indexes, to fsync (and close) later,
        even after the segment is sealed or closed."""
        handles = [os.dup(self.log.fd())]
        try:
            handles.append(self.time_index.sync_handle())
            handles.append(self.offset_index.sync_handle())
        except OSError:
            for fd in handles:
                os.close(fd)
            raise
        return handles

    def flush(self) -> None:
        for fd in self.sync_handles():
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def seal(self, files: FileCache) -> Segment:
        """Close this segment for writing and return it as a sealed, read-only segment."""
        self.finish_time_index()
        self.write_indexes()
        self.close()
        sealed = Segment.open_sealed(self.directory, self.base_offset, self.next_offset, files)
        sealed.max_timestamp = self.max_timestamp
        sealed.max_timestamp_offset = self.max_timestamp_offset
        sealed.created_ms = self.created_ms
        return sealed
