"""Rewriting a v2 batch with only some of its records: what the log cleaner writes.

The rewritten batch keeps everything a reader or a producer relies on: the base offset, the
last offset delta (so the batch still ends where it ended, and offsets never move), the
partition leader epoch, the attributes, every record's timestamp, and the producer id, epoch
and base sequence (so idempotence survives a clean). Only the record count, the records, the
max timestamp (of the kept records, unless the batch carries its log-append time) and the CRC
change. Compressed batches are decompressed and the kept records recompressed with the same
codec, as Kafka's cleaner does.

The one change of meaning is KIP-534's delete horizon: a batch given one has the
delete-horizon attribute bit set and the horizon in its base timestamp, each record's timestamp
delta rewritten against it so that every record's timestamp (base + delta, as every client
computes it) stays what the producer sent. A rebuilt batch without a horizon has the first kept
record's timestamp as its base again.

A batch may be kept with no records at all (Kafka's "empty batch"): the header alone,
uncompressed, so a producer's last sequence number outlives its records.

Records are located, not decoded: :func:`record_spans` reads only each record's length,
offset and timestamp deltas, key and whether the value is null, and the kept records' bytes
are copied whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import crc32c

from pafka.errors import CorruptMessageError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CODEC_MASK,
    CRC,
    CRC_OFFSET,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    Buffer,
    Codec,
)
from pafka.records.compression import compress, decompress
from pafka.records.encoding import read_varint, varint


class RecordSpan(NamedTuple):
    """Where one record lies in a batch's (decompressed) records, and what the cleaner needs."""

    start: int  # of the length prefix
    end: int
    timestamp_start: int  # of the timestamp delta
    timestamp_end: int
    offset: int
    timestamp: int
    key: bytes | None
    is_tombstone: bool


def records_body(batch: Buffer, header: BatchHeader) -> bytes | memoryview:
    """The records of a batch, decompressed when the batch has a codec."""
    body = memoryview(batch)[HEADER_SIZE : header.size]
    if header.codec is Codec.NONE:
        return body
    return decompress(header.codec, body, MAGIC_V2)


def record_spans(header: BatchHeader, body: Buffer) -> list[RecordSpan]:
    """Every record of a batch body, located; raises CorruptMessageError when they do not
    parse exactly (a count, a length or a field that disagrees with the bytes)."""
    spans = []
    pos = 0
    size = len(body)
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    try:
        for _ in range(header.records_count):
            start = pos
            length, pos = read_varint(body, pos)
            end = pos + length
            if length < 1 or end > size:
                raise CorruptMessageError("record runs past the end of the batch")
            timestamp_start = pos + 1  # after the attributes byte
            timestamp_delta, timestamp_end = read_varint(body, timestamp_start)
            offset_delta, pos = read_varint(body, timestamp_end)
            key_length, pos = read_varint(body, pos)
            key = None
            if key_length >= 0:
                key = bytes(body[pos : pos + key_length])
                pos += key_length
            value_length, pos = read_varint(body, pos)
            if pos > end or (value_length > 0 and pos + value_length > end):
                raise CorruptMessageError("record fields run past the record's length")
            spans.append(
                RecordSpan(
                    start,
                    end,
                    timestamp_start,
                    timestamp_end,
                    base_offset + offset_delta,
                    base_timestamp + timestamp_delta,
                    key,
                    value_length < 0,
                )
            )
            pos = end
    except IndexError:
        raise CorruptMessageError("truncated record in a batch") from None
    if pos != size:
        raise CorruptMessageError("bytes left over after the batch's last record")
    return spans


def rebuild(
    batch: Buffer,
    header: BatchHeader,
    body: Buffer,
    kept: Sequence[RecordSpan],
    *,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """The batch with only the ``kept`` records (in order), with ``delete_horizon_ms`` as its
    delete horizon (none when None); with no record kept, an empty batch."""
    if not kept:
        return empty_batch(header)
    attributes = header.attributes & ~DELETE_HORIZON_BIT
    base_timestamp = kept[0].timestamp if header.delete_horizon_ms is not None else None
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT
        base_timestamp = delete_horizon_ms
    records = bytearray()
    if base_timestamp is None or base_timestamp == header.base_timestamp:
        base_timestamp = header.base_timestamp
        for span in kept:
            records += body[span.start : span.end]
    else:
        for span in kept:
            _append_rebased(records, body, span, base_timestamp)
    payload: bytes | bytearray = records
    if header.codec is not Codec.NONE:
        payload = compress(header.codec, records, MAGIC_V2)
    if header.log_append_time:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(span.timestamp for span in kept)
    return _with_header(header, attributes, base_timestamp, max_timestamp, len(kept), payload)


def _append_rebased(out: bytearray, body: Buffer, span: RecordSpan, base_timestamp: int) -> None:
    """The record with its timestamp delta taken from ``base_timestamp`` (its length prefix
    recomputed: the delta's varint may change size)."""
    timestamp = varint(span.timestamp - base_timestamp)
    head_start = span.timestamp_start - 1  # the attributes byte
    length = 1 + len(timestamp) + span.end - span.timestamp_end
    out += varint(length)
    out += body[head_start : span.timestamp_start]
    out += timestamp
    out += body[span.timestamp_end : span.end]


def empty_batch(header: BatchHeader) -> bytes:
    """The batch's header alone, uncompressed: its offsets and producer state, no records."""
    attributes = header.attributes & ~CODEC_MASK & ~DELETE_HORIZON_BIT
    return _with_header(header, attributes, header.base_timestamp, header.max_timestamp, 0, b"")


def _with_header(
    header: BatchHeader,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    records_count: int,
    payload: bytes | bytearray,
) -> bytes:
    out = bytearray(HEADER_SIZE + len(payload))
    HEADER.pack_into(
        out, 0, header.base_offset, len(out) - LOG_OVERHEAD, header.partition_leader_epoch,
        MAGIC_V2, 0, attributes, header.last_offset_delta, base_timestamp, max_timestamp,
        header.producer_id, header.producer_epoch, header.base_sequence, records_count,
    )  # fmt: skip
    out[HEADER_SIZE:] = payload
    CRC.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)
