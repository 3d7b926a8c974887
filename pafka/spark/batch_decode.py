"""Kafka v2 record batches decoded into one Arrow record batch of Spark's Kafka schema (pure).

What the gateway's ``application/vnd.pafka.batches`` read returns goes in: batches back to
back (the record layout is :mod:`pafka.records.encoding`'s). Each batch's CRC is checked and
its records decompressed as a whole (every codec of :mod:`pafka.records.compression`); then
the records' bodies, joined in one buffer, are decoded field by field for all records at once
(:mod:`pafka.spark.varints`). Python walks only batch headers and, when records differ in
size, each record's length prefix (one integer per record); records of one size, the usual
bulk case, are found by arithmetic, checked against their length prefixes
(:mod:`pafka.spark.record_starts`).

Keys and values are not copied out one by one: they become Arrow binary views into the joined
buffer, then one cast in Arrow's C++ gives plain binary columns. Only records before ``start``
or at or after ``until`` are dropped (a batch may begin before the offset asked for); control
batches yield nothing. Headers are decoded (record by record) only when asked for. Answers of
a few records are decoded row by row instead (:mod:`pafka.spark.row_decode`), which costs them
less than the column calls.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from pafka.errors import CorruptMessageError
from pafka.records.batch import (
    HEADER_SIZE,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    BatchHeader,
    Buffer,
    Codec,
    check_batch,
    read_header,
)
from pafka.records.compression import decompress
from pafka.records.encoding import read_varint
from pafka.spark import row_decode
from pafka.spark.record_starts import record_starts
from pafka.spark.rows import COLUMNS, HEADERS
from pafka.spark.varints import PAD_BYTES, Bytes, Positions, read_varints

# Arrow binary views hold 12 bytes inline, longer values by (buffer, 32-bit offset).
INLINE_BYTES = 12
_PAD = bytes(PAD_BYTES)
MAX_BUFFER_BYTES = 2**31 - 1


class _Batches(NamedTuple):
    """The kept batches' records, bodies joined (then :data:`PAD_BYTES` zero bytes, so that
    the column reads need no copy of their own): per batch its header and where its records
    start and end in ``joined``."""

    joined: bytes
    headers: list[BatchHeader]
    spans: list[tuple[int, int]]


def decode_batches(
    data: Buffer, *, topic: str, partition: int, start: int, until: int, include_headers: bool
) -> pa.RecordBatch:
    """The records of ``data`` with offsets in ``[start, until)``, as Spark's Kafka rows."""
    batches = _walk(data, start, until)
    headers = batches.headers
    if sum(h.records_count for h in headers) <= row_decode.ROW_DECODE_MAX_RECORDS:
        return row_decode.decode_rows(
            batches.joined,
            headers,
            batches.spans,
            topic=topic,
            partition=partition,
            start=start,
            until=until,
            include_headers=include_headers,
        )
    limit = len(batches.joined) - PAD_BYTES
    if limit > MAX_BUFFER_BYTES:
        raise CorruptMessageError(f"{limit} bytes of records in one answer: too many to decode")
    buf: Bytes = np.frombuffer(batches.joined, np.uint8)
    starts = record_starts(
        batches.joined, buf, [h.records_count for h in headers], batches.spans, limit
    )
    fields = _fields(buf, starts, limit)
    counts = np.array([h.records_count for h in headers], np.int64)
    bases = np.array([h.base_offset for h in headers], np.int64)
    offsets = np.repeat(bases, counts) + fields.offset_delta
    firsts = np.array([h.base_timestamp for h in headers], np.int64)
    stamps = np.repeat(firsts, counts) + fields.ts_delta
    append_times = [h.max_timestamp if h.log_append_time else -1 for h in headers]
    appended = np.repeat(np.array(append_times, np.int64), counts)
    stamps = np.where(appended >= 0, appended, stamps)
    keep = (offsets >= start) & (offsets < until)
    every = bool(keep.all())

    def kept(a: Positions) -> Positions:
        return a if every else a[keep]

    n = int(keep.sum())
    joined = pa.py_buffer(batches.joined)
    columns: list[Any] = [
        _binary(buf, joined, kept(fields.key_pos), kept(fields.key_len)),
        _binary(buf, joined, kept(fields.value_pos), kept(fields.value_len)),
        pa.array([topic], pa.string()).take(np.zeros(n, np.int32)),
        pa.array(np.full(n, partition, np.int32)),
        pa.array(kept(offsets)),
        pa.array(kept(stamps) * 1000, row_decode.TIMESTAMP_TYPE),
        pa.array(kept((appended >= 0).astype(np.int32))),
    ]
    names = list(COLUMNS)
    if include_headers:
        rows = _headers(batches.joined, kept(fields.header_pos), kept(fields.header_count))
        columns.append(pa.array(rows, row_decode.HEADER_TYPE))
        names.append(HEADERS)
    return pa.RecordBatch.from_arrays(columns, names=names)


def _walk(data: Buffer, start: int, until: int) -> _Batches:
    view = memoryview(data)
    bodies: list[Buffer] = []
    out = _Batches(b"", [], [])
    pos = joined = 0
    while pos < len(view):
        if len(view) - pos < HEADER_SIZE:
            raise CorruptMessageError(f"truncated batch header at byte {pos}")
        header = read_header(view, pos)
        if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > len(view):
            raise CorruptMessageError(f"batch at byte {pos} claims {header.batch_length} bytes")
        check_batch(view, pos, header)
        wanted = header.next_offset > start and header.base_offset < until
        if wanted and not header.is_control and header.records_count > 0:
            body: Buffer = view[pos + HEADER_SIZE : pos + header.size]
            if header.codec is not Codec.NONE:
                body = decompress(header.codec, body, MAGIC_V2)
            bodies.append(body)
            out.headers.append(header)
            out.spans.append((joined, joined + len(body)))
            joined += len(body)
        pos += header.size
    bodies.append(_PAD)
    return out._replace(joined=b"".join(bodies))


class _Fields(NamedTuple):
    ts_delta: Positions
    offset_delta: Positions
    key_pos: Positions
    key_len: Positions
    value_pos: Positions
    value_len: Positions
    header_pos: Positions
    header_count: Positions


def _fields(buf: Bytes, starts: Positions, limit: int) -> _Fields:
    length, size = read_varints(buf, starts, limit)
    pos = starts + size
    end = pos + length
    pos = pos + 1  # attributes, unused
    ts_delta, size = read_varints(buf, pos, limit)
    pos = pos + size
    offset_delta, size = read_varints(buf, pos, limit)
    pos = pos + size
    key_len, size = read_varints(buf, pos, limit)
    key_pos = pos + size
    pos = key_pos + np.maximum(key_len, 0)
    value_len, size = read_varints(buf, pos, limit)
    value_pos = pos + size
    pos = value_pos + np.maximum(value_len, 0)
    header_count, size = read_varints(buf, pos, limit)
    header_pos = pos + size
    bad = (key_len < -1) | (value_len < -1) | (header_count < 0) | (header_pos > end)
    if bool(np.any(bad | ((header_count == 0) & (header_pos != end)))):
        raise CorruptMessageError("record length disagrees with its fields")
    return _Fields(
        ts_delta, offset_delta, key_pos, key_len, value_pos, value_len, header_pos, header_count
    )


def _binary(buf: Bytes, joined: pa.Buffer, pos: Positions, length: Positions) -> pa.Array:
    """A binary column of the slices ``buf[pos:pos+length]`` (null where length is -1)."""
    n = len(pos)
    valid = length >= 0
    if not bool(valid.any()):
        return pa.nulls(n, pa.binary())
    size = np.where(valid, length, 0).astype(np.int32)
    # Arrow's 16-byte view: int32 length, then 12 bytes inline, or for longer values a 4-byte
    # prefix, int32 buffer index and int32 offset.
    views = np.zeros((n, 16), np.uint8)
    words = views.view(np.int32)
    words[:, 0] = size
    long = size > INLINE_BYTES
    if bool(long.all()):  # the bulk case: no masks to apply
        views[:, 4:8] = buf[pos[:, None] + np.arange(4)]
        words[:, 3] = pos
    else:
        views[long, 4:8] = buf[pos[long, None] + np.arange(4)]
        words[long, 3] = pos[long]
    short = np.flatnonzero(~long & (size > 0))
    if len(short):
        inline = buf[pos[short, None] + np.arange(INLINE_BYTES)]
        inline[np.arange(INLINE_BYTES)[None, :] >= size[short, None]] = 0
        views[short, 4:] = inline
    validity = None if bool(valid.all()) else pa.py_buffer(np.packbits(valid, bitorder="little"))
    array = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), joined])
    return array.cast(pa.binary())


def _headers(raw: bytes, positions: Positions, counts: Positions) -> list[list[dict[str, Any]]]:
    rows: list[list[dict[str, Any]]] = []
    for pos, count in zip(positions.tolist(), counts.tolist(), strict=True):
        headers = []
        for _ in range(count):
            name, pos = _field(raw, pos)
            value, pos = _field(raw, pos)
            headers.append({"key": (name or b"").decode("utf-8", "replace"), "value": value})
        rows.append(headers)
    return rows


def _field(raw: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(raw, pos)
    if length < 0:
        return None, pos
    if pos + length > len(raw):
        raise CorruptMessageError("record header runs past the end of its batch")
    return raw[pos : pos + length], pos + length
