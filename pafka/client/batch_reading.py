"""Which records of a Fetch answer a read returns (pure).

The broker answers with whole batches starting at the batch that *holds* the requested offset,
so the records before it are dropped here, as are records past the high watermark (for
read_committed: the last stable offset) and past ``max_records``, and the batches the isolation
level hides (markers, aborted transactions: :mod:`pafka.client.isolation`).
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from pafka.client.isolation import CommittedFilter, UncommittedFilter
from pafka.records.batch import HEADER_SIZE, Buffer, check_batch, read_header
from pafka.records.encoding import Header, decode_records

_new_tuple = tuple.__new__


class TimestampType(enum.StrEnum):
    CREATE_TIME = "CREATE_TIME"
    LOG_APPEND_TIME = "LOG_APPEND_TIME"


class FetchedRecord(NamedTuple):
    """One record read (a tuple: a read makes one per record)."""

    offset: int
    timestamp_ms: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


def select_records(
    data: Buffer,
    offset: int,
    *,
    max_records: int,
    high_watermark: int,
    readable: CommittedFilter | UncommittedFilter | None = None,
) -> tuple[list[FetchedRecord], int]:
    """The records of ``data`` (whole batches) from ``offset`` on, at most ``max_records``,
    none at or past ``high_watermark`` (for read_committed: the last stable offset), none of
    a batch ``readable`` refuses (markers, aborted transactions); and the offset to read from
    next.

    A truncated last batch (a broker may cut a response at its size limit) is left for the next
    read. Each batch's CRC is checked before its records are trusted.
    """
    records: list[FetchedRecord] = []
    position = offset
    pos = 0
    readable = readable or UncommittedFilter()
    while len(data) - pos >= HEADER_SIZE and position < high_watermark:
        header = read_header(data, pos)
        if pos + header.size > len(data):
            break
        batch = memoryview(data)[pos : pos + header.size]
        # Every batch goes through the filter, even one before ``offset``: an aborted
        # transaction's state starts where it started.
        if readable.readable(header, batch) and header.next_offset > position:
            check_batch(batch, 0, header)
            kind = (
                TimestampType.LOG_APPEND_TIME
                if header.log_append_time
                else TimestampType.CREATE_TIME
            )
            for record in decode_records(batch):
                if record.offset < position:
                    continue
                if record.offset >= high_watermark:
                    return records, high_watermark
                # FetchedRecord(...) without its Python-level __new__: one per record read.
                records.append(
                    _new_tuple(
                        FetchedRecord,
                        (
                            record.offset,
                            record.timestamp,
                            kind,
                            record.key,
                            record.value,
                            tuple(record.headers) if record.headers else (),
                        ),
                    )
                )
                position = record.offset + 1
                if len(records) >= max_records:
                    return records, position
        position = max(position, min(header.next_offset, high_watermark))
        pos += header.size
    return records, position
