"""Control batches: the transaction markers (COMMIT, ABORT) a partition leader writes.

A control batch is a v2 batch with the transactional and control attribute bits set, the
producer id and epoch of the transaction it ends, base sequence -1 and exactly one record
(Kafka's ``EndTransactionMarker`` and ``ControlRecordType``)::

    record key    version int16 = 0 | type int16 (0 ABORT, 1 COMMIT)
    record value  version int16 = 0 | coordinator_epoch int32

Consumers never see a control record: they use the batch to end the transaction (dropping its
records when read_committed and aborted). Pure: bytes in, bytes out.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

import crc32c

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    CRC,
    CRC_OFFSET,
    HEADER_SIZE,
    TRANSACTIONAL_BIT,
    BatchHeader,
    Buffer,
    Codec,
    read_header,
)
from pafka.records.encoding import build_batch, read_varint

CONTROL_KEY = struct.Struct(
    ">"
    "h"  # version   0 (a newer version's type is still read, as Kafka does)
    "h"  # type      ControlRecordType: 0 ABORT, 1 COMMIT
)
END_TXN_VALUE = struct.Struct(
    ">"
    "h"  # version            0
    "i"  # coordinator_epoch  epoch of the transaction coordinator that wrote the marker
)
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
NO_SEQUENCE = -1
CONTROL_ATTRIBUTES = TRANSACTIONAL_BIT | CONTROL_BIT


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1
    UNKNOWN = -1


class TxnMarker(NamedTuple):
    """What a control batch says: how the transaction ended, by which coordinator epoch."""

    control_type: ControlType
    coordinator_epoch: int

    @property
    def is_abort(self) -> bool:
        return self.control_type is ControlType.ABORT


def build_marker(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """A control batch at base offset 0 ending ``producer_id``'s transaction."""
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    key = CONTROL_KEY.pack(CONTROL_KEY_VERSION, kind)
    value = END_TXN_VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)
    out = bytearray(
        build_batch(
            [(key, value, ())],
            timestamp_ms=timestamp_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=NO_SEQUENCE,
            is_transactional=True,
            compression=Codec.NONE,
        )
    )
    # build_batch writes data batches: the control bit goes in after, and the CRC again.
    struct.pack_into(">h", out, ATTRIBUTES_OFFSET, CONTROL_ATTRIBUTES)
    CRC.pack_into(out, CRC_OFFSET, crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def parse_marker(batch: Buffer, header: BatchHeader | None = None) -> TxnMarker:
    """The marker a control batch carries; raises on a batch that is not a well-formed one.

    Control batches are never compressed (Kafka writes them uncompressed), so the one record
    is read in place.
    """
    header = header or read_header(batch)
    if not header.is_control:
        raise InvalidRecordError("not a control batch")
    if header.records_count != 1 or header.codec is not Codec.NONE:
        raise InvalidRecordError("a control batch holds exactly one uncompressed record")
    try:
        pos = HEADER_SIZE
        _length, pos = read_varint(batch, pos)
        pos += 1  # attributes
        _ts_delta, pos = read_varint(batch, pos)
        _offset_delta, pos = read_varint(batch, pos)
        key_length, pos = read_varint(batch, pos)
        if key_length < CONTROL_KEY.size:
            raise InvalidRecordError(f"control record key of {key_length} bytes, at least 4")
        _key_version, kind = CONTROL_KEY.unpack_from(batch, pos)
        pos += key_length
        value_length, pos = read_varint(batch, pos)
        if value_length < END_TXN_VALUE.size:
            raise InvalidRecordError(f"end-transaction marker value of {value_length} bytes")
        _value_version, coordinator_epoch = END_TXN_VALUE.unpack_from(batch, pos)
    except (IndexError, struct.error) as exc:
        raise CorruptMessageError(f"truncated control record: {exc}") from None
    control_type = ControlType(kind) if kind in (0, 1) else ControlType.UNKNOWN
    return TxnMarker(control_type, coordinator_epoch)
