"""Record batches decoded into Arrow rows: the same rows as the record decoder gives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import patch

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptMessageError, PafkaError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC,
    CRC_OFFSET,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    Codec,
    assign_offsets,
    iter_batches,
)
from pafka.records.control import build_marker
from pafka.records.encoding import build_batch, decode_records
from pafka.spark import row_decode
from pafka.spark.batch_decode import decode_batches
from pafka.spark.rows import read_schema

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ALL = 2**63 - 1

maybe_bytes = st.none() | st.binary(max_size=40)
record = st.tuples(
    maybe_bytes,
    maybe_bytes,
    st.lists(st.tuples(st.text(max_size=5), maybe_bytes), max_size=2),
)
batch = st.tuples(
    st.lists(record, min_size=1, max_size=40),
    st.sampled_from(list(Codec)[:-1]),  # every codec but UNKNOWN
    st.integers(0, 2**40),  # first timestamp
    st.lists(st.integers(0, 10**6), min_size=40, max_size=40),  # later records' deltas
)


def log_of(batches: list[Any]) -> bytes:
    out, offset = b"", 0
    for records, codec, first_ms, deltas in batches:
        stamps = [first_ms + d for d in deltas[: len(records)]]
        built = build_batch(records, timestamps_ms=stamps, compression=codec)
        out += assign_offsets(built, offset)
        offset += len(records)
    return out


def expected_rows(data: bytes, start: int, until: int, headers: bool) -> list[dict[str, Any]]:
    rows = []
    for pos, header in iter_batches(data):
        for r in decode_records(data[pos : pos + header.size]):
            if start <= r.offset < until:
                row = {
                    "key": r.key,
                    "value": r.value,
                    "topic": "t",
                    "partition": 2,
                    "offset": r.offset,
                    "timestamp": EPOCH + timedelta(milliseconds=r.timestamp),
                    "timestampType": 1 if header.log_append_time else 0,
                }
                if headers:
                    row["headers"] = [{"key": k, "value": v} for k, v in r.headers]
                rows.append(row)
    return rows


def decoded(
    data: bytes, start: int = 0, until: int = ALL, headers: bool = True, damaged: bool = False
) -> list[Any]:
    """The rows, decoded both ways (by columns, and row by row as few records are), which must
    agree: on the rows, their schema, and on refusing. Records damaged under a valid CRC may be
    refused by one way and read (within their batch) by the other: the row decoder checks a
    record's length against its fields wherever it has headers, the column decoder its
    negative lengths."""
    answers = []
    for row_limit in (-1, 2**62):
        with patch.object(row_decode, "ROW_DECODE_MAX_RECORDS", row_limit):
            try:
                answers.append(
                    decode_batches(
                        data,
                        topic="t",
                        partition=2,
                        start=start,
                        until=until,
                        include_headers=headers,
                    )
                )
            except PafkaError as exc:
                answers.append(exc)
    by_columns, by_rows = answers
    for answer in answers if damaged else ():
        if isinstance(answer, PafkaError):
            raise answer
    if isinstance(by_columns, PafkaError) or isinstance(by_rows, PafkaError):
        assert type(by_columns) is type(by_rows)
        raise by_columns
    assert by_rows.schema == by_columns.schema
    assert by_rows.to_pylist() == by_columns.to_pylist()
    return by_columns.to_pylist()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(batch, min_size=1, max_size=4), st.integers(0, 200), st.integers(0, 200), st.booleans()
)
def test_same_rows_as_the_record_decoder(
    batches: list[Any], start: int, length: int, headers: bool
) -> None:
    data = log_of(batches)
    assert decoded(data, start, start + length, headers) == expected_rows(
        data, start, start + length, headers
    )


@pytest.mark.parametrize("count", [1, 15, 16, 100, 20_000])
@pytest.mark.parametrize("sizes", [(100,), (100, 101, 99), (5,), (0, 300)])
def test_runs_of_equal_and_varying_record_sizes(count: int, sizes: tuple[int, ...]) -> None:
    """Records of one size are found by arithmetic; sizes change with the offset delta's and
    the values' varints too."""
    records = [(None, b"v" * sizes[i % len(sizes)], []) for i in range(count)]
    data = assign_offsets(build_batch(records), 7) + assign_offsets(build_batch(records), 7 + count)
    rows = decode_batches(data, topic="t", partition=0, start=0, until=ALL, include_headers=False)
    assert rows.column("offset").to_pylist() == list(range(7, 7 + 2 * count))
    assert [len(v) for v in rows.column("value").to_pylist()] == [
        sizes[i % len(sizes)] for i in range(count)
    ] * 2
    assert rows.schema.names == [f.split()[0] for f in read_schema(False).split(", ")]


def test_log_append_time_and_control_batches() -> None:
    data = bytearray(build_batch([(b"k", b"v", [])], timestamp_ms=5))
    data[ATTRIBUTES_OFFSET + 1] |= TIMESTAMP_TYPE_BIT  # attributes are big-endian int16
    CRC.pack_into(data, CRC_OFFSET, crc32c.crc32c(bytes(data[ATTRIBUTES_OFFSET:])))
    marker = build_marker(
        producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=0
    )
    rows = decoded(bytes(data) + assign_offsets(marker, 1))
    assert [(r["offset"], r["timestampType"]) for r in rows] == [(0, 1)]


def test_empty_answer_has_the_schema() -> None:
    rows = decode_batches(b"", topic="t", partition=0, start=0, until=ALL, include_headers=True)
    assert rows.num_rows == 0 and rows.schema.names[-1] == "headers"


@pytest.mark.parametrize("cut", [1, 30, 70])
def test_damaged_or_truncated_batches_are_refused(cut: int) -> None:
    data = build_batch([(None, b"x" * 50, [])] * 3)
    with pytest.raises(CorruptMessageError):
        decoded(data[:-cut])
    flipped = bytearray(data)
    flipped[-cut] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        decoded(bytes(flipped))


@settings(max_examples=200, deadline=None)
@given(st.lists(record, min_size=1, max_size=20), st.binary(min_size=1, max_size=300), st.data())
def test_any_record_bytes_decode_or_are_refused(
    records: list[Any], noise: bytes, data: Any
) -> None:
    """Records damaged under an intact CRC (a buggy writer) are refused with a pafka error,
    never read past their batch."""
    built = bytearray(build_batch(records))
    at = data.draw(st.integers(HEADER_SIZE, len(built) - 1))
    built[at : at + len(noise)] = noise[: len(built) - at]
    CRC.pack_into(built, CRC_OFFSET, crc32c.crc32c(bytes(built[ATTRIBUTES_OFFSET:])))
    try:
        rows = decoded(bytes(built), damaged=True)
    except PafkaError:
        return
    # A damaged offset delta may put a record outside the range read: it is left out.
    assert len(rows) <= len(records)
