"""Record batch parsing, validation and offset assignment against kafka-python's encoder."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from pafka.errors import CorruptMessageError, InvalidRecordError, MessageTooLargeError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    LEADER_EPOCH_OFFSET,
    MAGIC_OFFSET,
    Codec,
    assign_offsets,
    iter_batches,
    read_header,
    record_count,
    validate,
)
from tests.unit.records_util import build_batch


def test_header_layout_is_kafkas() -> None:
    # Offsets from Kafka's DefaultRecordBatch.java.
    assert (HEADER_SIZE, LEADER_EPOCH_OFFSET, MAGIC_OFFSET) == (61, 12, 16)
    assert (CRC_OFFSET, ATTRIBUTES_OFFSET) == (17, 21)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_parse_matches_kafka_python(codec: str) -> None:
    values = [b"a" * 200, b"bb" * 200, b"ccc" * 200]
    raw = build_batch(values, codec=codec, producer_id=7, producer_epoch=1, base_sequence=4)
    header = read_header(raw)
    oracle = DefaultRecordBatch(raw)
    assert header.records_count == 3
    assert header.last_offset_delta == 2 and header.last_offset == 2 and header.next_offset == 3
    assert header.producer_id == 7 and header.producer_epoch == 1 and header.base_sequence == 4
    assert header.crc == oracle.crc
    assert header.codec == codec and isinstance(header.codec, Codec)
    assert not header.is_transactional and not header.is_control
    assert header.size == len(raw)
    assert validate(raw, 1 << 20) == [header]
    assert record_count(raw) == 3


def test_assign_offsets_keeps_the_crc_valid() -> None:
    raw = build_batch([b"x"] * 3) + build_batch([b"y"] * 2)
    rewritten = assign_offsets(raw, 100, leader_epoch=5)
    headers = [h for _, h in iter_batches(rewritten)]
    assert [h.base_offset for h in headers] == [100, 103]
    assert headers[-1].next_offset == 105
    assert all(h.partition_leader_epoch == 5 for h in headers)
    for pos, h in iter_batches(raw):
        assert (
            rewritten[pos + ATTRIBUTES_OFFSET : pos + h.size]
            == raw[pos + ATTRIBUTES_OFFSET : pos + h.size]
        )
    validate(rewritten, 1 << 20, from_client=False)
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


def test_flipped_crc_byte_is_corrupt() -> None:
    raw = bytearray(build_batch([b"payload"]))
    raw[CRC_OFFSET] ^= 0x01
    with pytest.raises(CorruptMessageError):
        validate(bytes(raw), 1 << 20)


@given(cut=st.integers(min_value=1, max_value=60))
def test_truncated_batches_are_corrupt(cut: int) -> None:
    raw = build_batch([b"abc", b"def"])
    with pytest.raises(CorruptMessageError):
        validate(raw[:-cut], 1 << 20)


@given(length=st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_inconsistent_batch_length_is_corrupt(length: int) -> None:
    raw = bytearray(build_batch([b"abc", b"def"]))
    if length == len(raw) - 12:
        return
    struct.pack_into(">i", raw, 8, length)
    with pytest.raises(CorruptMessageError):
        validate(bytes(raw), 1 << 20)


@pytest.mark.parametrize(
    ("magic", "error"),
    [
        (0, InvalidRecordError),
        (1, InvalidRecordError),
        (3, CorruptMessageError),
        (-1, CorruptMessageError),
    ],
)
def test_wrong_magic_is_refused(magic: int, error: type[Exception]) -> None:
    raw = bytearray(build_batch([b"v"]))
    struct.pack_into(">b", raw, MAGIC_OFFSET, magic)
    with pytest.raises(error):
        validate(bytes(raw), 1 << 20)


def test_producer_batches_start_at_offset_zero() -> None:
    raw = assign_offsets(build_batch([b"v"]), 42)
    with pytest.raises(InvalidRecordError):
        validate(raw, 1 << 20)
    assert validate(raw, 1 << 20, from_client=False)[0].base_offset == 42


def test_record_count_must_match_offsets() -> None:
    raw = bytearray(build_batch([b"a", b"b"]))
    struct.pack_into(">i", raw, 57, 5)  # records_count, covered by the CRC: fix the CRC too
    import crc32c

    struct.pack_into(">I", raw, CRC_OFFSET, crc32c.crc32c(bytes(raw[ATTRIBUTES_OFFSET:])))
    with pytest.raises(InvalidRecordError):
        validate(bytes(raw), 1 << 20)


def test_too_large_batch() -> None:
    raw = build_batch([b"x" * 5000])
    with pytest.raises(MessageTooLargeError):
        validate(raw, 4096)


def test_empty_payload_is_refused() -> None:
    with pytest.raises(CorruptMessageError):
        validate(b"", 1 << 20)


def test_garbage_never_raises_anything_else() -> None:
    @given(st.binary(max_size=200))
    def check(data: bytes) -> None:
        with contextlib.suppress(CorruptMessageError, InvalidRecordError, MessageTooLargeError):
            validate(data, 1 << 20)
        assert record_count(data) >= 0

    check()


def test_transactional_flag() -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=9, producer_epoch=0,
        base_sequence=0, batch_size=1 << 20,
    )  # fmt: skip
    builder.append(0, timestamp=1, key=None, value=b"v", headers=[])
    header = read_header(bytes(builder.build()))
    assert header.is_transactional and header.has_producer_id
