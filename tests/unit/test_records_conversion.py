"""Up-conversion (legacy produce -> v2 batch) and down-conversion (stored v2 -> old fetch) by
Kafka's rules; round trips as hypothesis properties, kafka-python as the independent codec."""

from __future__ import annotations

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from pafka.errors import InvalidRecordError, KafkaApiError, UnsupportedCompressionTypeError
from pafka.records.batch import (
    CONTROL_BIT,
    CRC,
    CRC_OFFSET,
    Codec,
    assign_offsets,
    iter_batches,
    read_header,
    validate,
)
from pafka.records.conversion import down_convert, is_legacy, up_convert
from pafka.records.encoding import build_batch, decode_records
from pafka.records.legacy import iter_messages, iter_records, write_message, write_wrapper

LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]
Row = tuple[bytes | None, bytes | None, int]

rows = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=20),
        st.none() | st.binary(max_size=200),
        st.integers(0, 2**41),
    ),
    min_size=1,
    max_size=12,
)


def _legacy_set(magic: int, codec: Codec, items: list[Row]) -> bytes:
    """A producer's message set, written by our writer (all codecs, magic 0 lz4 included)."""
    inner = bytearray()
    for i, (key, value, stamp) in enumerate(items):
        write_message(inner, i, magic, key, value, timestamp=stamp if magic else -1)
    if codec is Codec.NONE:
        return bytes(inner)
    out = bytearray()
    write_wrapper(out, codec, magic, bytes(inner), len(items) - 1, timestamp=items[-1][2])
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS),
    items=rows,
    base=st.integers(0, 2**40),
)
def test_legacy_to_v2_to_legacy_gives_back_the_records(
    magic: int, codec: Codec, items: list[Row], base: int
) -> None:
    produced = _legacy_set(magic, codec, items)
    assert is_legacy(produced)
    v2 = up_convert(produced)
    assert v2.records_converted == len(items)
    headers = validate(v2.records, 1 << 30)  # a valid client batch: one, base offset 0
    assert len(headers) == 1 and headers[0].codec is codec
    stored = assign_offsets(v2.records, base)
    back = down_convert(stored, magic, base)
    expected = [
        (base + i, stamp if magic else -1, key, value)
        for i, (key, value, stamp) in enumerate(items)
    ]
    got = [(m.offset, m.timestamp, m.key, m.value) for m in iter_records(back.records)]
    assert got == expected
    assert {m.codec for m in iter_messages(back.records)} == {codec}


@settings(max_examples=60, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([0, 1, 2]),
    items=rows,
)
def test_kafka_python_producers_sets_convert_and_read_back_by_kafka_python(
    magic: int, codec: int, items: list[Row]
) -> None:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 24)
    for i, (key, value, stamp) in enumerate(items):
        builder.append(i, stamp if magic else None, key, value)
    stored = assign_offsets(up_convert(bytes(builder.build())).records, 1000)
    records = MemoryRecords(down_convert(stored, magic, 1000).records)
    got = []
    while records.has_next():
        batch = records.next_batch()
        assert batch is not None
        got += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert got == [
        (1000 + i, stamp if magic else None, key, value)
        for i, (key, value, stamp) in enumerate(items)
    ]


def test_magic_0_records_get_no_timestamp() -> None:
    v2 = up_convert(_legacy_set(0, Codec.NONE, [(b"k", b"v", 99)]))
    assert [r.timestamp for r in decode_records(v2.records)] == [-1]
    assert read_header(v2.records).max_timestamp == -1


def test_plain_messages_become_one_batch() -> None:
    produced = _legacy_set(1, Codec.NONE, [(b"a", b"1", 5), (None, None, 6), (b"c", b"", 7)])
    batches = list(iter_batches(up_convert(produced).records))
    assert len(batches) == 1 and batches[0][1].records_count == 3


def test_mixed_magics_are_invalid_record() -> None:
    with pytest.raises(InvalidRecordError):
        up_convert(
            _legacy_set(0, Codec.NONE, [(b"a", b"1", 0)])
            + _legacy_set(1, Codec.NONE, [(b"b", b"2", 0)])
        )
    v2 = build_batch([(b"k", b"v", ())])
    with pytest.raises(InvalidRecordError):
        up_convert(_legacy_set(1, Codec.NONE, [(b"b", b"2", 0)]) + v2)


def test_more_than_one_wrapper_is_invalid_record() -> None:
    wrapper = _legacy_set(1, Codec.GZIP, [(b"a", b"1", 0)])
    with pytest.raises(InvalidRecordError):
        up_convert(wrapper + wrapper)
    with pytest.raises(InvalidRecordError):
        up_convert(wrapper + _legacy_set(1, Codec.NONE, [(b"b", b"2", 0)]))


def test_v2_batches_are_not_legacy() -> None:
    assert not is_legacy(build_batch([(b"k", b"v", ())]))
    assert not is_legacy(b"")


def _stored(batches: list[bytes], base: int = 0) -> bytes:
    return assign_offsets(b"".join(batches), base)


def test_down_conversion_drops_headers_and_skips_control_batches() -> None:
    data = build_batch([(b"k", b"v", [("h", b"x")])], timestamp_ms=5)
    control = bytearray(build_batch([(b"\x00\x00\x00\x00", b"", ())]))
    # a control batch as a transaction marker would be: the bit set, the CRC recomputed
    control[22] |= CONTROL_BIT
    CRC.pack_into(control, CRC_OFFSET, crc32c.crc32c(bytes(control[21:])))
    stored = _stored([data, bytes(control), data])
    got = [(m.offset, m.key, m.value) for m in iter_records(down_convert(stored, 1, 0).records)]
    assert got == [(0, b"k", b"v"), (2, b"k", b"v")]


def test_uncompressed_records_below_the_fetch_offset_are_dropped_compressed_kept() -> None:
    three = [(b"k", bytes([i]), ()) for i in range(3)]
    plain = _stored([build_batch(three)], 10)
    assert [m.offset for m in iter_records(down_convert(plain, 1, 11).records)] == [11, 12]
    zipped = _stored([build_batch(three, compression=Codec.GZIP)], 10)
    assert [m.offset for m in iter_records(down_convert(zipped, 1, 11).records)] == [10, 11, 12]


def test_log_append_time_carries_into_magic_1() -> None:
    batch = bytearray(build_batch([(b"k", b"v", ())], timestamp_ms=5))
    batch[22] |= 0x08  # LogAppendTime
    batch[35:43] = (777).to_bytes(8, "big")  # max_timestamp: the append time
    CRC.pack_into(batch, CRC_OFFSET, crc32c.crc32c(bytes(batch[21:])))
    message = next(iter_messages(down_convert(bytes(batch), 1, 0).records))
    assert message.timestamp == 777 and message.log_append_time


def test_converted_size_is_the_stored_size_or_the_first_unit() -> None:
    batches = [build_batch([(None, b"x" * 50, ())]) for _ in range(6)]
    stored = _stored(batches)
    out = down_convert(stored, 0, 0).records
    # magic 0 messages are smaller than v2 batches of one record: all six fit whole
    assert len(out) < len(stored)
    assert [m.offset for m in iter_messages(out)] == list(range(6))
    # many small records grow in magic 1 (34 bytes of overhead each, not about 8)
    small = build_batch([(None, b"v", ()) for _ in range(20)])
    first_unit = len(down_convert(_stored([small]), 1, 0).records)
    assert first_unit > len(small)
    two = _stored([small, small])
    assert first_unit > len(two)
    out = down_convert(two, 1, 0).records
    assert len(out) == first_unit  # the first batch whole, nothing more
    assert [m.offset for m in iter_messages(out)] == list(range(20))
    four = _stored([small] * 4)
    out = down_convert(four, 1, 0).records
    assert len(out) == len(four)  # cut at the stored size: a partial message at the end
    offsets = [m.offset for m in iter_messages(out, partial_tail=True)]
    assert offsets == list(range(len(offsets))) and 20 < len(offsets) < 80


def test_hard_limit_gives_nothing_when_the_first_batch_exceeds_it() -> None:
    stored = _stored([build_batch([(None, b"x" * 500, ())])])
    assert down_convert(stored, 0, 0, hard_limit_bytes=100).records == b""
    assert down_convert(stored, 0, 0).records != b""


def test_zstd_batches_cannot_go_below_magic_2() -> None:
    zstd = _stored([build_batch([(b"k", b"v", ())], compression=Codec.ZSTD)])
    with pytest.raises(UnsupportedCompressionTypeError):
        down_convert(zstd, 1, 0)
    plain = build_batch([(b"k", b"v", ())])
    mixed = _stored([plain, build_batch([(b"k", b"v", ())], compression=Codec.ZSTD), plain])
    # the first batch is served; the consumer meets the error at the zstd batch
    assert [m.offset for m in iter_records(down_convert(mixed, 1, 0).records)] == [0]


@settings(max_examples=300)
@given(data=st.binary(max_size=300), magic=st.sampled_from([0, 1]), codec=st.sampled_from([1, 3]))
def test_arbitrary_produce_payloads_convert_or_raise_kafka_errors(
    data: bytes, magic: int, codec: int
) -> None:
    # garbage as a whole set, and as the payload of a wrapper with a valid CRC
    out = bytearray()
    write_message(out, 0, magic, None, data, attributes=codec)
    for payload in (data, bytes(out)):
        try:
            up_convert(payload)
        except KafkaApiError as exc:
            assert exc.code in (
                2,
                76,
                87,
            )  # CORRUPT_MESSAGE, UNSUPPORTED_COMPRESSION, INVALID_RECORD


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(
        st.tuples(st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]), rows),
        min_size=1,
        max_size=5,
    ),
    magic=st.sampled_from([0, 1]),
    data=st.data(),
)
def test_down_converted_sets_are_what_old_consumers_can_read(
    batches: list[tuple[Codec, list[Row]]], magic: int, data: st.DataObject
) -> None:
    built = [
        build_batch([(k, v, ()) for k, v, _ in items], timestamps_ms=[t for *_, t in items],
                    compression=codec)
        for codec, items in batches
    ]  # fmt: skip
    stored = _stored(built, 500)
    total = sum(len(items) for _, items in batches)
    fetch_offset = data.draw(st.integers(500, 500 + total - 1))
    # a log read starts at the batch holding the fetch offset
    start, first = next((p, h) for p, h in iter_batches(stored) if h.last_offset >= fetch_offset)
    index = [p for p, _ in iter_batches(stored)].index(start)
    stored = stored[start:]
    out = down_convert(stored, magic, fetch_offset).records
    first_size = len(down_convert(stored[: first.size], magic, fetch_offset).records)
    assert len(out) <= max(len(stored), first_size)
    records = list(iter_records(out, partial_tail=True))
    assert records, "at least the first batch's records reach the consumer"
    offsets = [m.offset for m in records]
    assert offsets == sorted(set(offsets)) and offsets[-1] < 500 + total
    everything = [(k, v) for _, items in batches for k, v, _ in items]
    # whole messages are exactly the stored records at their offsets (compressed batches may
    # start before the fetch offset; uncompressed ones never do)
    assert [(m.key, m.value) for m in records] == [everything[o - 500] for o in offsets]
    if batches[index][0] is Codec.NONE:
        assert offsets[0] == fetch_offset
    else:
        assert offsets[0] == first.base_offset
