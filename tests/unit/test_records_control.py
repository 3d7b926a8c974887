"""Control batches (transaction markers), checked against kafka-python's batch reader."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import (
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    check_batch,
    read_header,
    validate,
)
from pafka.records.control import ControlType, TxnMarker, build_marker, parse_marker
from pafka.records.encoding import build_batch


@given(
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    commit=st.booleans(),
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
    timestamp_ms=st.integers(0, 2**41),
)
def test_marker_round_trip_and_kafka_python_reads_it(
    producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp_ms: int
) -> None:
    batch = build_marker(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        commit=commit,
        coordinator_epoch=coordinator_epoch,
        timestamp_ms=timestamp_ms,
    )
    head = read_header(batch)
    check_batch(batch, 0, head)  # CRC intact
    assert head.attributes == TRANSACTIONAL_BIT | CONTROL_BIT
    assert (head.producer_id, head.producer_epoch, head.base_sequence) == (
        producer_id,
        producer_epoch,
        -1,
    )
    assert head.records_count == 1 and head.last_offset_delta == 0
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    assert parse_marker(batch) == TxnMarker(kind, coordinator_epoch)
    # kafka-python's reader: a control batch, one record, Kafka's key and value layout.
    theirs = DefaultRecordBatch(bytearray(batch))
    assert theirs.is_control_batch and theirs.is_transactional
    assert theirs.validate_crc()
    (record,) = list(theirs)
    assert record.key == struct.pack(">hh", 0, kind)
    assert record.value == struct.pack(">hi", 0, coordinator_epoch)


def test_golden_abort_marker_record() -> None:
    batch = build_marker(
        producer_id=7, producer_epoch=2, commit=False, coordinator_epoch=5, timestamp_ms=1000
    )
    # length 16 (zig-zag), attributes, timestamp and offset deltas, key, value, no headers
    assert batch[61:] == bytes([0x20, 0, 0, 0, 0x08]) + b"\x00\x00\x00\x00" + bytes(
        [0x0C]
    ) + b"\x00\x00\x00\x00\x00\x05" + bytes([0])


def test_clients_may_not_write_markers_but_the_leader_may() -> None:
    batch = build_marker(
        producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=0
    )
    with pytest.raises(InvalidRecordError):
        validate(batch, 1 << 20)
    assert validate(batch, 1 << 20, from_client=False)[0].is_control


def test_a_data_batch_is_not_a_marker() -> None:
    with pytest.raises(InvalidRecordError):
        parse_marker(build_batch([(None, b"v", ())]))


def test_a_short_control_key_is_refused() -> None:
    batch = bytearray(
        build_marker(
            producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=0
        )
    )
    batch[65] = 0x04  # key length 2 (zig-zag), shorter than version + type
    with pytest.raises((InvalidRecordError, CorruptMessageError)):
        parse_marker(batch)


def test_unknown_control_type_parses_as_unknown() -> None:
    batch = bytearray(
        build_marker(
            producer_id=1, producer_epoch=0, commit=True, coordinator_epoch=3, timestamp_ms=0
        )
    )
    struct.pack_into(">h", batch, 68, 9)  # the key's type field
    assert parse_marker(batch) == TxnMarker(ControlType.UNKNOWN, 3)
