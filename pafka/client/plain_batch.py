"""Building the v2 batch of plain records (a key and a value, no headers) in one pass: what most
produce requests send, what a REST produce of many records is made of, and what the producer
makes of several callers' small sends (runs of records, each run with its own timestamp).

The bytes are exactly :func:`pafka.records.encoding.build_batch`'s for the same records (a
hypothesis test compares them); only the work differs. Each record is::

    length varint | attributes 0 | timestamp delta 0 | offset delta varint
    | key length varint (-1: null) | key | value length varint (-1: null) | value | 0 headers

so a record is its two fixed bytes, two lookups of small varints and two concatenations, and
the batch is one join.
"""

from __future__ import annotations

from collections.abc import Sequence

import crc32c

from pafka.records import batch as layout
from pafka.records.encoding import SMALL_VARINTS, varint

_NULL = varint(-1)
_NO_HEADERS = varint(0)
_START = b"\x00" + varint(0)  # attributes, timestamp delta
_SMALL = [varint(v) for v in range(SMALL_VARINTS)]  # lengths and offset deltas, looked up
# Attributes, timestamp delta and offset delta: what starts each record, by its index.
_HEADS = [_START + varint(i) for i in range(1024)]


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
    out = bytearray(layout.HEADER_SIZE)
    out += b"".join(parts)
    # Base offset 0 (the broker assigns it), CRC 0 until packed below, attributes 0 (no
    # compression, not transactional), no producer id, epoch or sequence.
    layout.HEADER.pack_into(
        out, 0, 0, len(out) - layout.LOG_OVERHEAD, layout.NO_PARTITION_LEADER_EPOCH,
        layout.MAGIC_V2, 0, 0, offset - 1, first_ms, latest_ms, -1, -1, -1, offset,
    )  # fmt: skip
    layout.CRC.pack_into(
        out, layout.CRC_OFFSET, crc32c.crc32c(memoryview(out)[layout.ATTRIBUTES_OFFSET :])
    )
    return bytes(out)
