"""Building the v2 batch of plain records (a key and a value, no headers) in one pass: what most
produce requests send, what a REST produce of many records is made of, and what the producer
makes of several callers' small sends (runs of records, each run with its own timestamp).

The bytes are exactly :func:`pafka.records.encoding.build_batch`'s for the same records (a
hypothesis test compares them); only the work differs. Each record is::

    length varint | attributes 0 | timestamp delta 0 | offset delta varint
    | key length varint (-1: null) | key | value length varint (-1: null) | value | 0 headers

so a record is its two fixed bytes, two lookups of small varints and two concatenations, and
the batch is one join. :func:`build_plain_columns` makes the same batch from keys and values
held as columns (a REST request's records), with no Python step per record: every per-record
operation is a ``map`` over a column, and the pieces are interleaved by slice assignment. When
there are no keys and every value has one size (a producer's usual request), everything but the
values is the same for the same record index, so it is taken from a table made once per size.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from itertools import repeat

import crc32c

from pafka.records import batch as layout
from pafka.records.encoding import SMALL_VARINTS, varint

_NULL = varint(-1)
_NO_HEADERS = varint(0)
_START = b"\x00" + varint(0)  # attributes, timestamp delta
_SMALL = [varint(v) for v in range(SMALL_VARINTS)]  # lengths and offset deltas, looked up
# Attributes, timestamp delta and offset delta: what starts each record, by its index.
_HEADS = [_START + varint(i) for i in range(1024)]
# Column builds: every record's start by its index, alone and with a null key after it.
COLUMN_RECORDS_MAX = 8192
_COLUMN_HEADS = [_START + varint(i) for i in range(COLUMN_RECORDS_MAX)]
_COLUMN_HEADS_NO_KEY = [head + _NULL for head in _COLUMN_HEADS]
_COLUMN_HEAD_SIZES = list(map(len, _COLUMN_HEADS))
_COLUMN_HEAD_NO_KEY_SIZES = list(map(len, _COLUMN_HEADS_NO_KEY))
_SMALL_SIZES = list(map(len, _SMALL))
# Keyless records of one value size are built from a table of their framing, kept for a few
# sizes and this many records (about 50 KB a size).
UNIFORM_RECORDS_MAX = 1024
UNIFORM_VALUE_MAX_BYTES = SMALL_VARINTS - 16  # the record's length is still a small varint


def _length(value: bytes | None) -> bytes:
    if value is None:
        return _NULL
    size = len(value)
    return _SMALL[size] if size < SMALL_VARINTS else varint(size)


def build_plain_batch(
    records: Sequence[tuple[bytes | None, bytes | None]], timestamp_ms: int
) -> bytes:
    """One uncompressed batch of ``(key, value)`` records, every one stamped ``timestamp_ms``,
    without producer id or sequence (as :func:`~pafka.records.encoding.build_batch` leaves
    them)."""
    return build_plain_runs([(records, timestamp_ms)])


def build_plain_columns(
    keys: Sequence[bytes] | None, values: Sequence[bytes], timestamp_ms: int
) -> bytes:
    """:func:`build_plain_batch` of ``zip(keys, values)`` (every key null when ``keys`` is
    None), built a column at a time. Null values, a mix of null and other keys, keys or values
    of :data:`SMALL_VARINTS` bytes or more and over :data:`COLUMN_RECORDS_MAX` records are
    built record by record instead (same bytes)."""
    count = len(values)
    if (
        not 0 < count <= COLUMN_RECORDS_MAX
        or (keys is not None and (len(keys) != count or None in keys))
        or None in values
    ):
        return _by_record(keys, values, timestamp_ms)
    value_sizes = list(map(len, values))
    if keys is None and value_sizes.count(value_sizes[0]) == count:
        uniform = _uniform_keyless(values, value_sizes[0])
        if uniform is not None:
            return _framed(uniform, count, timestamp_ms, timestamp_ms)
    add, small, small_sizes = operator.add, _SMALL.__getitem__, _SMALL_SIZES.__getitem__
    try:
        value_lengths = list(map(small, value_sizes))
        if keys is None:
            heads = _COLUMN_HEADS_NO_KEY[:count]
            # The record: its start and null key, value length varint, value, 0 headers.
            sizes = map(
                add, map(add, _COLUMN_HEAD_NO_KEY_SIZES, value_sizes), map(small_sizes, value_sizes)
            )
            parts: list[bytes] = [_NO_HEADERS] * (5 * count)
            parts[0::5] = map(small, map((1).__add__, sizes))
            parts[1::5] = heads
            parts[2::5] = value_lengths
            parts[3::5] = values
        else:
            key_sizes = list(map(len, keys))
            key_lengths = list(map(small, key_sizes))
            sizes = map(
                add,
                map(add, map(add, _COLUMN_HEAD_SIZES, key_sizes), map(small_sizes, key_sizes)),
                map(add, value_sizes, map(small_sizes, value_sizes)),
            )
            parts = [_NO_HEADERS] * (7 * count)
            parts[0::7] = map(small, map((1).__add__, sizes))
            parts[1::7] = _COLUMN_HEADS[:count]
            parts[2::7] = key_lengths
            parts[3::7] = keys
            parts[4::7] = value_lengths
            parts[5::7] = values
    except IndexError:  # a length or a record size beyond the small varints
        return _by_record(keys, values, timestamp_ms)
    return _framed(b"".join(parts), count, timestamp_ms, timestamp_ms)


def _uniform_keyless(values: Sequence[bytes], size: int) -> bytes | None:
    """The records of keyless values all of ``size`` bytes (a producer's usual request): every
    record's bytes but its value are the same for the same index, so they come from a table and
    the records are the table's pieces and the values, interleaved. None beyond the table."""
    count = len(values)
    if count > UNIFORM_RECORDS_MAX or size > UNIFORM_VALUE_MAX_BYTES:
        return None
    between = _uniform_pieces(size)
    parts = [_NO_HEADERS] * (2 * count + 1)
    parts[0 : 2 * count : 2] = between[:count]
    parts[1::2] = values
    return b"".join(parts)


@functools.lru_cache(maxsize=32)
def _uniform_pieces(size: int) -> list[bytes]:
    """What comes before the value of each record by index (keyless, a ``size``-byte value):
    the previous record's 0 headers (none before the first), this record's length, start, null
    key and value length."""
    pieces = []
    for index in range(UNIFORM_RECORDS_MAX):
        head = _COLUMN_HEADS_NO_KEY[index] + _SMALL[size]
        record_size = len(head) + size + len(_NO_HEADERS)
        pieces.append((_NO_HEADERS if index else b"") + _SMALL[record_size] + head)
    return pieces


def _by_record(
    keys: Sequence[bytes | None] | None, values: Sequence[bytes | None], timestamp_ms: int
) -> bytes:
    pairs = list(zip(repeat(None, len(values)) if keys is None else keys, values, strict=True))
    return build_plain_runs([(pairs, timestamp_ms)])


def build_plain_runs(
    runs: Sequence[tuple[Sequence[tuple[bytes | None, bytes | None]], int]],
) -> bytes:
    """One batch of several runs of ``(key, value)`` records, each run stamped with its own
    time (as deltas from the first run's): the sends of several callers in one batch, each
    record keeping the time it was sent at."""
    parts: list[bytes] = []
    extend = parts.extend
    small = _SMALL
    first_ms = runs[0][1] if runs else 0
    latest_ms = first_ms
    offset = 0
    for records, timestamp_ms in runs:
        latest_ms = max(latest_ms, timestamp_ms)
        delta = timestamp_ms - first_ms
        for key, value in records:
            key_length = _length(key)
            value_length = _length(value)
            if delta == 0 and offset < len(_HEADS):
                heads = _HEADS[offset]
            else:
                heads = b"\x00" + varint(delta) + varint(offset)
            size = (
                len(heads)
                + len(key_length)
                + len(value_length)
                + (len(key) if key else 0)
                + (len(value) if value else 0)
                + 1  # no headers
            )
            # One join of every piece: no intermediate bytes per record.
            extend(
                (
                    small[size] if size < SMALL_VARINTS else varint(size),
                    heads,
                    key_length,
                    key or b"",
                    value_length,
                    value or b"",
                    _NO_HEADERS,
                )
            )
            offset += 1
    if not offset:
        raise ValueError("a record batch holds at least one record")
    return _framed(b"".join(parts), offset, first_ms, latest_ms)


def _framed(records: bytes, count: int, first_ms: int, latest_ms: int) -> bytes:
    """``count`` records (their bytes back to back) with the batch header before them."""
    out = bytearray(layout.HEADER_SIZE)
    out += records
    # Base offset 0 (the broker assigns it), CRC 0 until packed below, attributes 0 (no
    # compression, not transactional), no producer id, epoch or sequence.
    layout.HEADER.pack_into(
        out, 0, 0, len(out) - layout.LOG_OVERHEAD, layout.NO_PARTITION_LEADER_EPOCH,
        layout.MAGIC_V2, 0, 0, count - 1, first_ms, latest_ms, -1, -1, -1, count,
    )  # fmt: skip
    layout.CRC.pack_into(
        out, layout.CRC_OFFSET, crc32c.crc32c(memoryview(out)[layout.ATTRIBUTES_OFFSET :])
    )
    return bytes(out)
