"""select_records: the records a stateless read returns from a Fetch response's batches."""

from __future__ import annotations

import crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.client.batch_reading import TimestampType, select_records
from pafka.errors import CorruptMessageError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC,
    CRC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    Codec,
    assign_offsets,
)
from pafka.records.encoding import build_batch
from tests.unit.records_util import build_batch as kafka_python_batch


def log_of(sizes: list[int], *, start: int = 0) -> bytes:
    """Batches of ``sizes`` records with consecutive offsets from ``start``; value = offset."""
    out = b""
    offset = start
    for size in sizes:
        batch = build_batch(
            [(None, str(offset + i).encode(), [("h", b"1")]) for i in range(size)],
            timestamps_ms=[1000 + offset + i for i in range(size)],
        )
        out += assign_offsets(batch, offset)
        offset += size
    return out


def test_records_start_exactly_at_the_offset() -> None:
    data = log_of([5, 5])
    records, next_offset = select_records(data, 3, max_records=100, high_watermark=10)
    assert [r.offset for r in records] == list(range(3, 10))
    assert [r.value for r in records] == [str(i).encode() for i in range(3, 10)]
    assert records[0].timestamp_ms == 1003
    assert records[0].timestamp_type is TimestampType.CREATE_TIME
    assert records[0].headers == (("h", b"1"),)
    assert next_offset == 10


def test_max_records_and_high_watermark_stop_the_read() -> None:
    data = log_of([4, 4, 4])
    records, next_offset = select_records(data, 1, max_records=5, high_watermark=12)
    assert [r.offset for r in records] == [1, 2, 3, 4, 5]
    assert next_offset == 6
    records, next_offset = select_records(data, 1, max_records=100, high_watermark=7)
    assert [r.offset for r in records] == list(range(1, 7))
    assert next_offset == 7


def test_truncated_last_batch_is_left_for_the_next_read() -> None:
    data = log_of([3, 3])
    records, next_offset = select_records(data[:-5], 0, max_records=100, high_watermark=6)
    assert [r.offset for r in records] == [0, 1, 2]
    assert next_offset == 3
    assert select_records(b"", 4, max_records=10, high_watermark=9) == ([], 4)


def test_a_damaged_batch_is_refused() -> None:
    data = bytearray(log_of([3]))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        select_records(bytes(data), 0, max_records=10, high_watermark=3)


def test_log_append_time_batches() -> None:
    batch = bytearray(build_batch([(b"k", b"v", [])], timestamp_ms=5))
    # Set the timestamp type bit and fix the CRC, as a producer would for LogAppendTime.
    attributes = int.from_bytes(batch[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2], "big")
    batch[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2] = (attributes | TIMESTAMP_TYPE_BIT).to_bytes(
        2, "big"
    )
    CRC.pack_into(batch, CRC_OFFSET, crc32c.crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))
    (record,), _ = select_records(bytes(batch), 0, max_records=1, high_watermark=1)
    assert record.timestamp_type is TimestampType.LOG_APPEND_TIME


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_from_other_clients(codec: str) -> None:
    data = assign_offsets(kafka_python_batch([b"a", b"b", b"c"], codec=codec), 10)
    records, next_offset = select_records(data, 11, max_records=10, high_watermark=13)
    assert [(r.offset, r.value) for r in records] == [(11, b"b"), (12, b"c")]
    assert next_offset == 13


def test_gzip_built_here() -> None:
    data = build_batch([(None, b"x", [])], compression=Codec.GZIP)
    (record,), _ = select_records(data, 0, max_records=1, high_watermark=1)
    assert record.value == b"x"


@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=6),
    st.integers(0, 40),
    st.integers(1, 40),
    st.integers(0, 40),
)
def test_against_a_model(sizes: list[int], offset: int, max_records: int, hw_cut: int) -> None:
    total = sum(sizes)
    offset = min(offset, total)
    high_watermark = min(total, offset + hw_cut)
    records, next_offset = select_records(
        log_of(sizes), offset, max_records=max_records, high_watermark=high_watermark
    )
    expected = list(range(offset, high_watermark))[:max_records]
    assert [r.offset for r in records] == expected
    assert next_offset == (expected[-1] + 1 if expected else offset)
