"""Record batch parsing, validation and offset assignment against kafka-python's encoder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from pafka.errors import CorruptMessageError, InvalidRecordError, MessageTooLargeError
from pafka.records.batch import HEADER_SIZE, assign_offsets, iter_batches, read_header, validate
from tests.unit.records_util import build_batch


def test_header_layout_is_kafkas() -> None:
    assert HEADER_SIZE == 61


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_parse_matches_kafka_python(codec: str) -> None:
    values = [b"a" * 200, b"bb" * 200, b"ccc" * 200]
    raw = build_batch(values, codec=codec, producer_id=7, producer_epoch=1, base_sequence=4)
    header = read_header(raw)
    oracle = DefaultRecordBatch(raw)
    assert header.records_count == 3
    assert header.last_offset_delta == 2
    assert header.producer_id == 7 and header.base_sequence == 4
    assert header.crc == oracle.crc
    assert header.codec == codec
    assert header.size == len(raw)
    assert validate(raw, 1 << 20) == [header]


def test_assign_offsets_keeps_the_crc_valid() -> None:
    raw = build_batch([b"x"] * 3) + build_batch([b"y"] * 2)
    rewritten, next_offset = assign_offsets(raw, 100, leader_epoch=5)
    assert next_offset == 105
    headers = [h for _, h in iter_batches(rewritten)]
    assert [h.base_offset for h in headers] == [100, 103]
    assert all(h.partition_leader_epoch == 5 for h in headers)
    validate(rewritten, 1 << 20)
    assert DefaultRecordBatch(rewritten[: headers[0].size]).validate_crc()


@given(
    position=st.integers(min_value=21, max_value=80), flip=st.integers(min_value=1, max_value=255)
)
def test_any_flipped_byte_under_the_crc_is_caught(position: int, flip: int) -> None:
    raw = bytearray(build_batch([b"payload-" * 3]))
    position = min(position, len(raw) - 1)
    raw[position] ^= flip
    with pytest.raises((CorruptMessageError, InvalidRecordError)):
        validate(bytes(raw), 1 << 20)


@given(cut=st.integers(min_value=1, max_value=60))
def test_truncated_batches_are_corrupt(cut: int) -> None:
    raw = build_batch([b"abc", b"def"])
    with pytest.raises(CorruptMessageError):
        validate(raw[:-cut], 1 << 20)


def test_wrong_magic_is_refused() -> None:
    raw = bytearray(build_batch([b"v"]))
    raw[16] = 1
    with pytest.raises(InvalidRecordError):
        validate(bytes(raw), 1 << 20)


def test_too_large_batch() -> None:
    raw = build_batch([b"x" * 5000])
    with pytest.raises(MessageTooLargeError):
        validate(raw, 4096)


def test_empty_payload_is_refused() -> None:
    with pytest.raises(CorruptMessageError):
        validate(b"", 1 << 20)
