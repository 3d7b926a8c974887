"""Legacy message sets (magic 0 and 1) and their codecs: golden bytes, kafka-python as an
independent encoder and decoder, and the errors Kafka answers bad messages with."""

from __future__ import annotations

import contextlib
import struct
import zlib

import lz4.frame
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from pafka.errors import CorruptMessageError, InvalidRecordError, UnsupportedCompressionTypeError
from pafka.records.batch import Codec, validate
from pafka.records.compression import compress, decompress, xxh32_short
from pafka.records.legacy import (
    MAGIC_OFFSET,
    Message,
    inner_messages,
    iter_messages,
    iter_records,
    write_message,
    write_wrapper,
)

# Offset 5, key b"k", value b"hello", magic 0, no compression, written field by field.
GOLDEN_V0 = bytes.fromhex(
    "0000000000000005"  # offset
    "00000014"  # message size: 20
    "a4cdab3a"  # CRC-32 of the rest
    "00"  # magic
    "00"  # attributes
    "00000001" "6b"  # key
    "00000005" "68656c6c6f"  # value
)  # fmt: skip
# Offset 7, null key, value b"v", magic 1, timestamp 1_600_000_000_000 (CreateTime).
GOLDEN_V1 = bytes.fromhex(
    "0000000000000007"
    "00000017"  # message size: 23
    "95c2095e"
    "01"
    "00"
    "00000174876e8000"  # timestamp
    "ffffffff"  # null key
    "00000001" "76"
)  # fmt: skip


def _golden_crc(message: bytes) -> int:
    return int(struct.unpack_from(">I", message, 12)[0])


def test_golden_crcs_are_crc32_of_magic_to_end() -> None:
    for golden in (GOLDEN_V0, GOLDEN_V1):
        assert zlib.crc32(golden[16:]) == _golden_crc(golden)


def test_golden_messages_written_byte_for_byte() -> None:
    out = bytearray()
    write_message(out, 5, 0, b"k", b"hello")
    assert bytes(out) == GOLDEN_V0
    out = bytearray()
    write_message(out, 7, 1, None, b"v", timestamp=1_600_000_000_000)
    assert bytes(out) == GOLDEN_V1


def test_golden_messages_read() -> None:
    assert list(iter_messages(GOLDEN_V0 + GOLDEN_V1)) == [
        Message(5, 0, 0, -1, b"k", b"hello"),
        Message(7, 1, 0, 1_600_000_000_000, None, b"v"),
    ]


def test_golden_messages_match_kafka_python() -> None:
    for magic, golden in ((0, GOLDEN_V0), (1, GOLDEN_V1)):
        builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
        message = next(iter_messages(golden))
        builder.append(message.offset, message.timestamp, message.key, message.value)
        assert bytes(builder.build()) == golden


def test_magic_sits_where_a_v2_batch_has_it() -> None:
    assert MAGIC_OFFSET == 16
    assert GOLDEN_V0[MAGIC_OFFSET] == 0 and GOLDEN_V1[MAGIC_OFFSET] == 1


def test_crc_mismatch_is_corrupt_message() -> None:
    broken = bytearray(GOLDEN_V0)
    broken[-1] ^= 0x01
    with pytest.raises(CorruptMessageError, match="CRC"):
        list(iter_messages(bytes(broken)))


def test_partial_trailing_message_skipped_only_when_asked() -> None:
    data = GOLDEN_V0 + GOLDEN_V1[:-3]
    assert [m.offset for m in iter_messages(data, partial_tail=True)] == [5]
    with pytest.raises(CorruptMessageError):
        list(iter_messages(data))
    assert [m.offset for m in iter_messages(GOLDEN_V0 + GOLDEN_V1[:5], partial_tail=True)] == [5]


def test_unknown_magic_and_v2_mixed_in() -> None:
    bad = bytearray(GOLDEN_V0)
    bad[16] = 3
    with pytest.raises(CorruptMessageError, match="magic"):
        list(iter_messages(bytes(bad)))
    bad[16] = 2
    with pytest.raises(InvalidRecordError):
        list(iter_messages(bytes(bad)))


def test_lying_sizes_are_corrupt_message() -> None:
    for size in (-5, 3, 10_000):
        bad = bytearray(GOLDEN_V0)
        struct.pack_into(">i", bad, 8, size)
        with pytest.raises(CorruptMessageError):
            list(iter_messages(bytes(bad)))


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_kafka_errors(data: bytes) -> None:
    with contextlib.suppress(
        CorruptMessageError, InvalidRecordError, UnsupportedCompressionTypeError
    ):
        list(iter_records(data))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_wrappers_decode_kafka_pythons(magic: int, codec: str) -> None:
    if magic == 0 and codec == "lz4":
        pytest.skip("kafka-python needs xxhash to write magic 0 lz4; covered below")
    ids = {"gzip": 1, "snappy": 2, "lz4": 3}
    builder = LegacyRecordBatchBuilder(magic, ids[codec], 1 << 20)
    for i in range(4):
        builder.append(i, 1000 + i if magic else None, f"k{i}".encode(), b"v" * (i * 100))
    wrapper = bytearray(builder.build())
    struct.pack_into(">q", wrapper, 0, 41)  # the broker's offset of the last inner message
    records = list(iter_records(bytes(wrapper)))
    assert [(r.key, r.value) for r in records] == [
        (f"k{i}".encode(), b"v" * (i * 100)) for i in range(4)
    ]
    # magic 1 inner offsets are relative to the wrapper; magic 0's are what was written
    assert [r.offset for r in records] == ([38, 39, 40, 41] if magic else [0, 1, 2, 3])
    assert [r.timestamp for r in records] == ([1000, 1001, 1002, 1003] if magic else [-1] * 4)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
def test_our_wrappers_read_by_kafka_python(magic: int, codec: Codec) -> None:
    if magic == 0 and codec is Codec.LZ4:
        pytest.skip("kafka-python needs xxhash to read magic 0 lz4")
    inner = bytearray()
    for i in range(3):
        write_message(inner, i if magic else 10 + i, magic, b"k", b"x" * i, timestamp=50 + i)
    out = bytearray()
    write_wrapper(out, codec, magic, bytes(inner), 12, timestamp=52)
    batches = MemoryRecords(bytes(out))
    got = [(r.offset, r.value) for r in batches.next_batch()]
    assert got == [(10, b""), (11, b"x"), (12, b"xx")]


def test_lz4_magic_0_header_checksum_is_kafkas_broken_one() -> None:
    frame = compress(Codec.LZ4, b"data" * 50, 0)
    # FLG 0x60: version 1, independent blocks; BD 0x40: 64 KiB blocks (what Java writes)
    assert frame[:6] == bytes.fromhex("04224d186040")
    assert frame[6] == (xxh32_short(frame[:6]) >> 8) & 0xFF  # KAFKA-3160: magic included
    assert frame[6] != 0x82  # the correct checksum of descriptor 60 40
    assert compress(Codec.LZ4, b"data" * 50, 1)[:7] == bytes.fromhex("04224d18604082")
    assert decompress(Codec.LZ4, frame, 0) == b"data" * 50
    with pytest.raises(CorruptMessageError):
        decompress(Codec.LZ4, frame, 1)  # magic 1 checks the checksum


def test_xxh32_agrees_with_lz4s_own_descriptor_checksums() -> None:
    # A content size makes the descriptor 10 bytes long: both XXH32 branches are used.
    for size in (1, 300, 70_000):
        frame = lz4.frame.compress(b"z" * size, store_size=True, block_linked=False)
        assert frame[4] & 0x08
        assert frame[14] == (xxh32_short(frame[4:14]) >> 8) & 0xFF
    assert [xxh32_short(b""), xxh32_short(b"a"), xxh32_short(b"abc")] == [
        0x02CC5D05,
        0x550D7456,
        0x32D153FF,
    ]


def test_zstd_is_refused_below_magic_2() -> None:
    for magic in (0, 1):
        with pytest.raises(UnsupportedCompressionTypeError):
            compress(Codec.ZSTD, b"x", magic)
        with pytest.raises(UnsupportedCompressionTypeError):
            decompress(Codec.ZSTD, b"x", magic)


def test_raw_snappy_is_read_too() -> None:
    import snappy

    assert decompress(Codec.SNAPPY, snappy.compress(b"abc" * 30), 1) == b"abc" * 30


def test_nested_compression_is_invalid_record() -> None:
    inner = bytearray()
    write_wrapper(inner, Codec.GZIP, 1, GOLDEN_V1, 7)
    out = bytearray()
    write_wrapper(out, Codec.GZIP, 1, bytes(inner), 7)
    with pytest.raises(InvalidRecordError):
        inner_messages(next(iter_messages(bytes(out))))


def test_a_v2_only_reader_refuses_legacy_messages_for_their_magic() -> None:
    # Produce v3+: Kafka's INVALID_RECORD, even for a message shorter than a v2 header
    for golden in (GOLDEN_V0, GOLDEN_V1, GOLDEN_V1 * 3):
        with pytest.raises(InvalidRecordError):
            validate(golden, 1 << 20)
