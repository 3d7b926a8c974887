"""Records inside a v2 batch: building small batches and decoding them.

For tests, the CLI and the gateway; the broker itself never decodes records to store or serve
them. Each record (after the batch header, compressed as a whole when the batch has a codec)::

    length            varint   bytes of the rest of this record
    attributes        int8     unused, 0
    timestamp_delta   varlong  timestamp - batch base_timestamp
    offset_delta      varint   offset - batch base_offset
    key_length        varint   -1 for a null key
    key               bytes
    value_length      varint   -1 for a null value
    value             bytes
    header_count      varint
      key_length varint, key utf-8, value_length varint (-1 null), value bytes

Varints are zig-zag encoded base-128, as in protobuf. Batches are built with any codec as Kafka
writes it (:mod:`pafka.records.compression`); on decoding, gzip uses the standard library and
snappy (xerial framing), lz4 (frame format) and zstd go through kafka-python's codec module,
which imports the optional libraries if they are installed.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import crc32c

from pafka.errors import CorruptMessageError, UnsupportedCompressionTypeError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    CRC,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    TRANSACTIONAL_BIT,
    BatchHeader,
    Buffer,
    Codec,
    read_header,
)
from pafka.records.compression import compress

Header = tuple[str, bytes | None]
RecordInput = tuple[bytes | None, bytes | None, Sequence[Header]]


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]


# -- varints -----------------------------------------------------------------------------------


def write_varint(value: int, out: bytearray) -> None:
    zigzag = (value << 1) ^ (value >> 63)
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _encoded_varint(value: int) -> bytes:
    out = bytearray()
    write_varint(value, out)
    return bytes(out)


# The varints of -SMALL_VARINTS .. SMALL_VARINTS - 1 (one or two bytes), looked up rather than
# computed: lengths, offset and timestamp deltas of small records are almost always in range.
SMALL_VARINTS = 1 << 13
_SMALL_VARINTS = [_encoded_varint(v) for v in range(-SMALL_VARINTS, SMALL_VARINTS)]


def varint(value: int) -> bytes:
    """The zig-zag varint of ``value``."""
    if -SMALL_VARINTS <= value < SMALL_VARINTS:
        return _SMALL_VARINTS[value + SMALL_VARINTS]
    return _encoded_varint(value)


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """(value, next position) of the zig-zag varint at ``pos``."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise CorruptMessageError("truncated or overlong varint in a record")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


# The value of each one-byte varint (0..127): most lengths, deltas and counts are one byte.
_ONE_BYTE = [(b >> 1) ^ -(b & 1) for b in range(0x80)]


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    """:func:`read_varint` of a varint longer than a byte; two bytes (the usual case) directly."""
    if pos + 1 < len(buf) and (second := buf[pos + 1]) < 0x80:
        raw = (buf[pos] & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    return read_varint(buf, pos)


def _read_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    if (byte := buf[pos] if pos < len(buf) else 0x80) < 0x80:
        length, pos = _ONE_BYTE[byte], pos + 1
    else:
        length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > len(buf):
        raise CorruptMessageError("record field runs past the end of the batch")
    return bytes(buf[pos : pos + length]), pos + length


# -- building ----------------------------------------------------------------------------------


_NULL = varint(-1)
_ATTRIBUTES = b"\x00"  # a record's attributes, unused
_NO_HEADERS = varint(0)


def _append_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> None:
    """One record onto ``out``; its length prefix is summed from the pieces, not re-read."""
    timestamp_field, offset_field = varint(timestamp_delta), varint(offset_delta)
    key_length = _NULL if key is None else varint(len(key))
    value_length = _NULL if value is None else varint(len(value))
    key, value = key or b"", value or b""
    encoded_headers: bytes | bytearray = _NO_HEADERS
    if headers:
        encoded_headers = bytearray(varint(len(headers)))
        for name, header_value in headers:
            encoded = name.encode()
            encoded_headers += varint(len(encoded))
            encoded_headers += encoded
            if header_value is None:
                encoded_headers += _NULL
            else:
                encoded_headers += varint(len(header_value))
                encoded_headers += header_value
    out += varint(
        len(_ATTRIBUTES) + len(timestamp_field) + len(offset_field) + len(key_length) + len(key)
        + len(value_length) + len(value) + len(encoded_headers)
    )  # fmt: skip
    out += _ATTRIBUTES
    out += timestamp_field
    out += offset_field
    out += key_length
    out += key
    out += value_length
    out += value
    out += encoded_headers


def build_batch(
    records: Sequence[RecordInput],
    *,
    base_offset: int = 0,
    timestamp_ms: int = 0,
    timestamps_ms: Sequence[int] | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    compression: Codec = Codec.NONE,
) -> bytes:
    """One v2 batch of ``(key, value, headers)`` records, all stamped ``timestamp_ms`` unless
    ``timestamps_ms`` gives each its own (stored as deltas from the first)."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    stamps = list(timestamps_ms) if timestamps_ms is not None else [timestamp_ms] * len(records)
    if len(stamps) != len(records):
        raise ValueError("one timestamp per record")
    compression = Codec(compression)
    first_ms, max_ms = stamps[0], max(stamps)
    out = bytearray(HEADER_SIZE)  # the header is packed in once the records are there
    for i, ((key, value, headers), stamp) in enumerate(zip(records, stamps, strict=True)):
        _append_record(out, i, stamp - first_ms, key, value, headers)
    if compression is not Codec.NONE:
        out[HEADER_SIZE:] = compress(compression, out[HEADER_SIZE:], MAGIC_V2)
    attributes = compression.id | (TRANSACTIONAL_BIT if is_transactional else 0)
    HEADER.pack_into(
        out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0,
        attributes, len(records) - 1, first_ms, max_ms, producer_id, producer_epoch,
        base_sequence, len(records),
    )  # fmt: skip
    CRC.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


# -- decoding ----------------------------------------------------------------------------------


def _decompressor(codec: Codec) -> Callable[[bytes], bytes]:
    if codec is Codec.GZIP:
        return gzip.decompress
    from kafka import codec as kc  # optional libraries are imported there, if installed

    available = {
        Codec.SNAPPY: (kc.has_snappy, kc.snappy_decode),
        Codec.LZ4: (kc.has_lz4, kc.lz4_decode),
        Codec.ZSTD: (kc.has_zstd, kc.zstd_decode),
    }
    if codec not in available or not available[codec][0]():
        raise UnsupportedCompressionTypeError(f"cannot decompress {codec} record batches here")
    decode: Callable[[bytes], bytes] = available[codec][1]
    return decode


def decode_records(batch: Buffer) -> Iterator[Record]:
    """The records of one batch (offsets from its base offset). Control batches yield none."""
    header = read_header(batch)
    if header.size > len(batch):
        raise CorruptMessageError("truncated record batch")
    if header.attributes & CONTROL_BIT:
        return
    body: Buffer = memoryview(batch)[HEADER_SIZE : header.size]
    if header.codec is not Codec.NONE:
        try:
            body = _decompressor(header.codec)(bytes(body))
        except (OSError, EOFError, ValueError, RuntimeError) as exc:
            raise CorruptMessageError(f"cannot decompress {header.codec} batch: {exc}") from exc
    yield from body_records(header, body)


def body_records(header: BatchHeader, body: Buffer) -> Iterator[Record]:
    """The records of a batch from its uncompressed body (the bytes after its header)."""
    try:
        yield from _records(header, body)
    except IndexError:  # a field's first byte past the end of the records
        raise CorruptMessageError("truncated or overlong varint in a record") from None


def read_headers(body: Buffer, pos: int) -> tuple[list[Header], int]:
    """The headers of a record from its header count at ``pos``, and the position after them."""
    headers: list[Header] = []
    count, pos = read_varint(body, pos)
    for _ in range(count):
        name, pos = _read_bytes(body, pos)
        header_value, pos = _read_bytes(body, pos)
        headers.append(((name or b"").decode("utf-8", "replace"), header_value))
    return headers, pos


def _records(header: BatchHeader, body: Buffer) -> Iterator[Record]:
    # The hot loop of every JSON and binary read: one-byte varints are decoded inline, two-byte
    # ones (lengths of records under 8 KiB, offset deltas past 63) without read_varint's loop,
    # and fields are sliced from one bytes copy of the batch (a slice of bytes is bytes; of a
    # memoryview, a view to copy).
    body = bytes(body)
    size = len(body)
    pos = 0
    base_offset, base_timestamp = header.base_offset, header.base_timestamp
    append_time = header.max_timestamp if header.log_append_time else None
    one_byte = _ONE_BYTE
    new_record = tuple.__new__  # Record(...) without its Python-level __new__
    for _ in range(header.records_count):
        if (byte := body[pos]) < 0x80:
            length, pos = one_byte[byte], pos + 1
        else:
            length, pos = _varint_at(body, pos)
        end = pos + length
        if length < 0 or end > size:
            raise CorruptMessageError("record runs past the end of the batch")
        pos += 1  # attributes
        if (byte := body[pos]) < 0x80:
            timestamp_delta, pos = one_byte[byte], pos + 1
        else:
            timestamp_delta, pos = _varint_at(body, pos)
        if (byte := body[pos]) < 0x80:
            offset_delta, pos = one_byte[byte], pos + 1
        else:
            offset_delta, pos = _varint_at(body, pos)
        key: bytes | None
        value: bytes | None
        if (byte := body[pos] if pos < size else 0x80) == 1:  # -1: a null key, the usual case
            key, pos = None, pos + 1
        else:
            key, pos = _read_bytes(body, pos)
        if (byte := body[pos] if pos < size else 0x80) < 0x80:
            length, pos = one_byte[byte], pos + 1
        else:
            length, pos = _varint_at(body, pos)
        if length < 0:
            value = None
        elif pos + length > size:
            raise CorruptMessageError("record field runs past the end of the batch")
        else:
            value, pos = body[pos : pos + length], pos + length
        if body[pos] == 0:  # no headers, the usual case
            headers: list[Header] = []
            pos += 1
        else:
            headers, pos = read_headers(body, pos)
        if pos != end:
            raise CorruptMessageError("record length disagrees with its fields")
        timestamp = base_timestamp + timestamp_delta if append_time is None else append_time
        yield new_record(Record, (base_offset + offset_delta, timestamp, key, value, headers))
    if pos != size:  # Kafka's reader refuses bytes left after the batch's last record too
        raise CorruptMessageError("records disagree with their batch's length")
