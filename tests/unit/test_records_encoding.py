"""build_batch / decode_records: golden bytes from kafka-python, round trips, bad input."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import Codec, assign_offsets, read_header, validate
from pafka.records.encoding import build_batch, decode_records, read_varint, write_varint
from tests.unit.records_util import build_batch as kafka_python_batch

RECORDS = [
    (b"k", b"v", [("h", b"x")]),
    (None, b"vv" * 100, []),
    (b"k3", None, [("a", None), ("b", b"")]),
]


def test_golden_bytes_equal_kafka_pythons_builder() -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=5, producer_epoch=2,
        base_sequence=10, batch_size=1 << 20,
    )  # fmt: skip
    for i, (key, value, headers) in enumerate(RECORDS):
        builder.append(i, timestamp=1_700_000_000_000, key=key, value=value, headers=headers)
    expected = bytes(builder.build())
    ours = build_batch(
        RECORDS,
        timestamp_ms=1_700_000_000_000,
        producer_id=5,
        producer_epoch=2,
        base_sequence=10,
        partition_leader_epoch=0,  # kafka-python leaves 0 where Java producers write -1
    )
    assert ours == expected


def test_hand_derived_single_record() -> None:
    raw = build_batch([(None, b"hi", [])], timestamp_ms=0)
    record = raw[61:]
    # length 8 | attributes 0 | ts delta 0 | offset delta 0 | key -1 | value len 2 "hi" | 0 hdrs
    assert record == bytes([16, 0, 0, 0, 1, 4]) + b"hi" + bytes([0])
    assert read_header(raw).batch_length == len(raw) - 12


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_decode_kafka_python_batches(codec: str) -> None:
    raw = assign_offsets(kafka_python_batch([b"a", b"bb", b""], codec=codec, timestamp_ms=7), 40)
    got = list(decode_records(raw))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (40, 7, None, b"a"),
        (41, 7, None, b"bb"),
        (42, 7, None, b""),
    ]


keys = st.none() | st.binary(max_size=20)
headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3)


@given(
    records=st.lists(st.tuples(keys, keys, headers), min_size=1, max_size=8),
    timestamp=st.integers(min_value=-1, max_value=2**50),
    gzip=st.booleans(),
)
def test_round_trip(records: list, timestamp: int, gzip: bool) -> None:
    raw = build_batch(records, timestamp_ms=timestamp, compression=Codec.GZIP if gzip else "none")
    validate(raw, 1 << 24)
    got = list(decode_records(raw))
    assert [(r.key, r.value, r.headers) for r in got] == [(k, v, list(h)) for k, v, h in records]
    assert [r.offset for r in got] == list(range(len(records)))
    assert {r.timestamp for r in got} == {timestamp}


@given(value=st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    out = bytearray()
    write_varint(value, out)
    assert read_varint(out, 0) == (value, len(out))


@given(data=st.binary(min_size=1, max_size=60))
def test_garbage_records_raise_only_corrupt(data: bytes) -> None:
    raw = bytearray(build_batch([(b"k", b"value", [])]))
    raw = raw[:61] + data
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    with contextlib.suppress(CorruptMessageError, InvalidRecordError):
        list(decode_records(bytes(raw)))
