"""The record decoder's inline varints agree with the plain decoder it replaced, record for
record and refusal for refusal (the plain loop is kept here as the reference, with the
helpers the change left as they were)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptMessageError
from pafka.records.batch import (
    CRC,
    CRC_OFFSET,
    HEADER_SIZE,
    BatchHeader,
    Buffer,
    crc_of,
    read_header,
)
from pafka.records.encoding import (
    Header,
    Record,
    _read_bytes,
    _records,
    build_batch,
    decode_records,
    read_headers,
    read_varint,
)


def _reference_records(header: BatchHeader, body: Buffer) -> Iterator[Record]:
    pos = 0
    append_time = header.max_timestamp if header.log_append_time else None
    for _ in range(header.records_count):
        length, pos = read_varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            raise CorruptMessageError("record runs past the end of the batch")
        pos += 1
        timestamp_delta, pos = read_varint(body, pos)
        offset_delta, pos = read_varint(body, pos)
        key, pos = _read_bytes(body, pos)
        value, pos = _read_bytes(body, pos)
        headers, pos = read_headers(body, pos)  # unchanged: not a shortcut under test
        if pos != end:
            raise CorruptMessageError("record length disagrees with its fields")
        timestamp = header.base_timestamp + timestamp_delta if append_time is None else append_time
        yield Record(header.base_offset + offset_delta, timestamp, key, value, headers)
    if pos != len(body):
        raise CorruptMessageError("records disagree with their batch's length")


def _outcome(decode: object, batch: bytes) -> object:
    """The records decoded, or the refusal's text (an index past the end reads as
    decode_records words it)."""
    header = read_header(batch)
    body = memoryview(batch)[HEADER_SIZE : header.size]
    try:
        return list(decode(header, body))  # type: ignore[operator]
    except IndexError:
        return "truncated or overlong varint in a record"
    except CorruptMessageError as exc:
        return str(exc)


# Sizes across the one-, two- and three-byte varint boundaries (64, 8192 once zig-zagged).
_DATA = st.one_of(
    st.none(),
    st.binary(max_size=80),
    st.integers(60, 70).map(lambda n: b"v" * n),
    st.integers(8180, 8200).map(lambda n: b"w" * n),
)
_HEADERS = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2)
_RECORDS = st.lists(st.tuples(_DATA, _DATA, _HEADERS), min_size=1, max_size=80)
_STAMPS = st.integers(0, 2**40)


@settings(max_examples=150, deadline=None)
@given(records=_RECORDS, stamp=_STAMPS, spread=st.integers(0, 10**9), base=st.integers(0, 2**40))
def test_valid_batches_decode_alike(
    records: list[tuple[bytes | None, bytes | None, list[Header]]],
    stamp: int,
    spread: int,
    base: int,
) -> None:
    stamps = [stamp + (i * spread) % 100_000 for i in range(len(records))]
    batch = build_batch(records, base_offset=base, timestamps_ms=stamps)
    found = _outcome(_records, batch)
    assert found == _outcome(_reference_records, batch)
    assert [r[1:4] for r in found] == [  # type: ignore[union-attr]
        (s, k, v) for s, (k, v, _) in zip(stamps, records, strict=True)
    ]


@settings(max_examples=300, deadline=None)
@given(
    records=st.lists(st.tuples(_DATA, _DATA, _HEADERS), min_size=1, max_size=6),
    edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 40),
)
def test_damaged_batches_are_refused_alike(
    records: list[tuple[bytes | None, bytes | None, list[Header]]],
    edits: list[tuple[int, int]],
    cut: int,
) -> None:
    batch = bytearray(build_batch(records))
    for where, byte in edits:
        batch[HEADER_SIZE + where % (len(batch) - HEADER_SIZE)] = byte
    # A cut body with the batch length left as it was is refused before any record is read;
    # shortening the length field with it reaches the record decoder.
    cut = min(cut, len(batch) - HEADER_SIZE)
    damaged = bytearray(batch[: len(batch) - cut])
    damaged[8:12] = (len(damaged) - 12).to_bytes(4, "big")
    for candidate in (bytes(batch), bytes(damaged)):
        assert _outcome(_records, candidate) == _outcome(_reference_records, candidate)


@settings(max_examples=20, deadline=None)
@given(count=st.integers(60, 300), value=_DATA, key=_DATA)
def test_offset_deltas_past_one_byte_decode_alike(
    count: int, value: bytes | None, key: bytes | None
) -> None:
    batch = build_batch([(key, value, [])] * count, base_offset=7)
    found = _outcome(_records, batch)
    assert found == _outcome(_reference_records, batch)
    assert [r[0] for r in found] == list(range(7, 7 + count))  # type: ignore[union-attr]


def test_bytes_left_after_the_last_record_are_refused() -> None:
    """As Kafka's reader refuses them: a batch counting fewer records than its body holds (its
    CRC intact) is not read as the records counted."""
    batch = bytearray(build_batch([(None, b"a", []), (None, b"b", []), (None, b"c", [])]))
    batch[57:61] = (2).to_bytes(4, "big")  # records_count
    CRC.pack_into(batch, CRC_OFFSET, crc_of(batch, 0, read_header(batch)))
    assert _outcome(_records, bytes(batch)) == "records disagree with their batch's length"
    assert _outcome(_reference_records, bytes(batch)) == _outcome(_records, bytes(batch))
    with pytest.raises(CorruptMessageError, match="disagree"):
        list(decode_records(bytes(batch)))
