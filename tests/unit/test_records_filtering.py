"""Rebuilding a batch with some of its records (the cleaner's rewrite), against the decoder.

Random batches (keys, null values, headers, timestamps, every codec, producer fields, the
log-append-time bit) and random subsets kept: the rebuilt batch must be one a follower accepts,
end where the original ended, and decode to exactly the kept records as they were.
"""

from __future__ import annotations

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import CorruptMessageError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    Codec,
    assign_offsets,
    read_header,
    validate,
)
from pafka.records.encoding import Record, build_batch, decode_records, varint
from pafka.records.filtering import empty_batch, rebuild, record_spans, records_body

CODECS = [c for c in Codec if c is not Codec.UNKNOWN]
BASE_TIMESTAMP_MS = 1_700_000_000_000

headers_strategy = st.lists(
    st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2
)
record_strategy = st.tuples(
    st.none() | st.binary(max_size=8), st.none() | st.binary(max_size=30), headers_strategy
)


@st.composite
def batches(draw: st.DrawFn) -> tuple[bytes, list[bool]]:
    records = draw(st.lists(record_strategy, min_size=1, max_size=12))
    stamps = draw(
        st.lists(
            st.integers(min_value=-5_000, max_value=5_000),
            min_size=len(records),
            max_size=len(records),
        )
    )
    producer_id = draw(st.sampled_from([-1, 0, 7, 2**40]))
    raw = build_batch(
        records,
        timestamps_ms=[BASE_TIMESTAMP_MS + s for s in stamps],
        producer_id=producer_id,
        producer_epoch=-1 if producer_id < 0 else draw(st.integers(0, 2**15 - 1)),
        base_sequence=-1 if producer_id < 0 else draw(st.integers(0, 2**31 - 100)),
        partition_leader_epoch=draw(st.integers(-1, 100)),
        compression=draw(st.sampled_from(CODECS)),
    )
    raw = assign_offsets(raw, draw(st.integers(0, 2**40)), leader_epoch=draw(st.integers(0, 9)))
    if draw(st.booleans()):
        raw = with_log_append_time(raw, BASE_TIMESTAMP_MS + 99_999)
    kept = draw(st.lists(st.booleans(), min_size=len(records), max_size=len(records)))
    return raw, kept


def with_log_append_time(raw: bytes, append_time_ms: int) -> bytes:
    """The batch as a LogAppendTime topic's leader stores it: the bit set, the time in
    max_timestamp, the CRC recomputed."""
    header = read_header(raw)
    out = bytearray(raw)
    fields = header._replace(
        attributes=header.attributes | TIMESTAMP_TYPE_BIT, max_timestamp=append_time_ms
    )
    HEADER.pack_into(out, 0, *fields)
    CRC.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


@settings(max_examples=250)
@given(batches())
def test_rebuilt_batch_holds_exactly_the_kept_records(case: tuple[bytes, list[bool]]) -> None:
    raw, keep = case
    header = read_header(raw)
    body = records_body(raw, header)
    spans = record_spans(header, body)
    original = list(decode_records(raw))
    assert [(s.offset, s.key, s.is_tombstone) for s in spans] == [
        (r.offset, r.key, r.value is None) for r in original
    ]
    kept = [span for span, k in zip(spans, keep, strict=True) if k]
    rebuilt = rebuild(raw, header, body, kept)

    (new,) = validate(rebuilt, 2**31 - 1, from_client=False)
    assert new.size == len(rebuilt)
    same = (
        "base_offset", "last_offset_delta", "partition_leader_epoch", "producer_id",
        "producer_epoch", "base_sequence", "base_timestamp",
    )  # fmt: skip
    assert {f: getattr(new, f) for f in same} == {f: getattr(header, f) for f in same}
    assert new.log_append_time == header.log_append_time
    assert new.records_count == len(kept)
    expected = [r for r, k in zip(original, keep, strict=True) if k]
    assert list(decode_records(rebuilt)) == expected
    if not kept:
        assert new.codec is Codec.NONE and len(rebuilt) == HEADER_SIZE
    else:
        assert new.codec == header.codec
    if header.log_append_time:
        assert new.max_timestamp == header.max_timestamp
        assert all(r.timestamp == header.max_timestamp for r in decode_records(rebuilt))
    elif kept:
        assert new.max_timestamp == max(s.timestamp for s in kept)


@settings(max_examples=100)
@given(batches())
def test_empty_batch_keeps_offsets_and_producer_state(case: tuple[bytes, list[bool]]) -> None:
    raw, _ = case
    header = read_header(raw)
    empty = empty_batch(header)
    (new,) = validate(empty, 2**31 - 1, from_client=False)
    assert len(empty) == HEADER_SIZE
    assert new.records_count == 0 and new.codec is Codec.NONE
    assert new._replace(batch_length=0, crc=0, attributes=0, records_count=0) == header._replace(
        batch_length=0, crc=0, attributes=0, records_count=0
    )
    assert new.attributes == header.attributes & ~0x07
    assert list(decode_records(empty)) == []


def test_keeping_every_record_rebuilds_an_equivalent_batch() -> None:
    raw = build_batch([(b"k", b"v", []), (b"k2", None, [("h", b"x")])], timestamp_ms=5)
    header = read_header(raw)
    body = records_body(raw, header)
    spans = record_spans(header, body)
    assert rebuild(raw, header, body, spans) == raw


@pytest.mark.parametrize("codec", CODECS)
def test_a_tombstone_and_a_keyless_record_are_told_apart(codec: Codec) -> None:
    raw = build_batch([(None, b"v", []), (b"k", None, []), (b"", b"", [])], compression=codec)
    header = read_header(raw)
    spans = record_spans(header, records_body(raw, header))
    assert [(s.key, s.is_tombstone) for s in spans] == [(None, False), (b"k", True), (b"", False)]


def _record(fields: bytes) -> bytes:
    """One record whose length prefix says it holds ``fields`` (which may be malformed)."""
    return varint(len(fields)) + fields


GOOD = b"\x00" + varint(0) + varint(0) + varint(1) + b"k" + varint(1) + b"v" + varint(0)
MALFORMED_BODIES = {
    "empty body, one record claimed": b"",
    "truncated length varint": b"\x80",
    "overlong varint": b"\xff" * 11,
    "zero length": varint(0),
    "negative length": varint(-3),
    "length past the end": varint(40) + GOOD,
    "attributes only": _record(b"\x00"),
    "cut in the timestamp": _record(b"\x00\x80"),
    "key past the record": _record(b"\x00" + varint(0) + varint(0) + varint(30) + b"kk"),
    "value past the record": _record(
        b"\x00" + varint(0) + varint(0) + varint(1) + b"k" + varint(50) + b"v"
    ),
    "no value length": _record(b"\x00" + varint(0) + varint(0) + varint(1) + b"k"),
    "leftover bytes": _record(GOOD) + b"\x00",
}


@pytest.mark.parametrize("body", MALFORMED_BODIES.values(), ids=MALFORMED_BODIES.keys())
def test_record_spans_refuse_malformed_bodies(body: bytes) -> None:
    header = read_header(build_batch([(b"k", b"v", [])]))
    with pytest.raises(CorruptMessageError):
        record_spans(header, body)


@settings(max_examples=400)
@given(st.binary(max_size=60), st.integers(min_value=0, max_value=5))
def test_record_spans_of_arbitrary_bytes_parse_or_raise_corrupt_message(
    body: bytes, count: int
) -> None:
    header = read_header(build_batch([(b"k", b"v", [])]))._replace(records_count=count)
    try:
        spans = record_spans(header, body)
    except CorruptMessageError:
        return
    assert len(spans) == count
    assert spans == sorted(spans) and (not spans or spans[-1].end == len(body))


def test_decoding_a_rebuilt_batch_gives_original_offsets_across_a_gap() -> None:
    raw = assign_offsets(
        build_batch([(b"a", b"1", []), (b"b", b"2", []), (b"a", b"3", [])], timestamp_ms=9), 100
    )
    header = read_header(raw)
    body = records_body(raw, header)
    spans = record_spans(header, body)
    rebuilt = rebuild(raw, header, body, spans[1:])
    assert list(decode_records(rebuilt)) == [
        Record(101, 9, b"b", b"2", []),
        Record(102, 9, b"a", b"3", []),
    ]
    assert read_header(rebuilt).last_offset == 102


@settings(max_examples=150, deadline=None)
@given(batches(), st.integers(-(2**40), 2**40), st.booleans())
def test_a_delete_horizon_moves_the_base_timestamp_never_a_records(
    drawn: tuple[bytes, list[bool]], horizon_delta_ms: int, clear_later: bool
) -> None:
    """KIP-534: the horizon goes in the base timestamp, every record's delta is rewritten
    against it, so clients computing base + delta still get the producer's timestamps; a
    batch rebuilt without a horizon has its first record's timestamp as base again."""
    raw, kept_mask = drawn
    header = read_header(raw)
    originals = list(decode_records(raw))
    body = records_body(raw, header)
    kept = [s for s, keep in zip(record_spans(header, body), kept_mask, strict=True) if keep]
    if not kept:
        return
    horizon_ms = BASE_TIMESTAMP_MS + horizon_delta_ms
    stamped = rebuild(raw, header, body, kept, delete_horizon_ms=horizon_ms)
    stamped_header = validate(stamped, 2**31 - 1, from_client=False)[0]
    assert stamped_header.delete_horizon_ms == horizon_ms
    assert stamped_header.base_timestamp == horizon_ms
    assert stamped_header.max_timestamp == (
        header.max_timestamp if header.log_append_time else max(s.timestamp for s in kept)
    )
    by_offset = {r.offset: r for r in originals}
    expected = [by_offset[s.offset] for s in kept]
    assert list(decode_records(stamped)) == expected
    # Cleaned again, keeping what it has: the horizon stays as it is, byte for byte.
    body2 = records_body(stamped, stamped_header)
    spans2 = record_spans(stamped_header, body2)
    again = rebuild(stamped, stamped_header, body2, spans2, delete_horizon_ms=horizon_ms)
    assert list(decode_records(again)) == expected
    if clear_later:
        cleared = rebuild(stamped, stamped_header, body2, spans2)
        cleared_header = validate(cleared, 2**31 - 1, from_client=False)[0]
        assert cleared_header.delete_horizon_ms is None
        assert cleared_header.base_timestamp == kept[0].timestamp
        assert list(decode_records(cleared)) == expected


def test_an_empty_batch_carries_no_delete_horizon() -> None:
    raw = build_batch([(b"k", None, [])], timestamp_ms=BASE_TIMESTAMP_MS, producer_id=3)
    header = read_header(raw)
    body = records_body(raw, header)
    stamped = rebuild(raw, header, body, record_spans(header, body), delete_horizon_ms=5)
    emptied = empty_batch(read_header(stamped))
    assert read_header(emptied).delete_horizon_ms is None
