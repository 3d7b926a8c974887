"""Kafka's v2 record batch (magic 2): the header layout, validation and offset assignment.

A batch is stored and served byte for byte as the producer sent it. The CRC is a CRC-32C
(Castagnoli) of every byte from ``attributes`` to the end of the batch, records included. It
does **not** cover ``base_offset``, ``batch_length``, ``partition_leader_epoch`` or ``magic``,
which is why the leader can assign offsets and stamp its epoch without touching the payload or
recomputing the CRC. Compressed batches (gzip, snappy, lz4, zstd) are never decompressed here.

Errors, as Kafka answers a produce request (``LogValidator`` / ``ProduceRequest``):

* truncated bytes, a batch length that disagrees with the bytes, an unknown magic (> 2) or a
  CRC mismatch: :class:`CorruptMessageError` (CORRUPT_MESSAGE);
* magic 0 or 1 (the pre-0.11 formats), a producer batch whose base offset is not 0, a record
  count that disagrees with the last offset delta, a control batch from a client, an unknown
  codec: :class:`InvalidRecordError` (INVALID_RECORD);
* a batch larger than ``max.message.bytes``: :class:`MessageTooLargeError`.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from typing import NamedTuple

import crc32c

from pafka.errors import CorruptMessageError, InvalidRecordError, MessageTooLargeError

Buffer = bytes | bytearray | memoryview

HEADER = struct.Struct(
    ">"
    "q"  # base_offset             first offset of the batch; the broker rewrites it on append
    "i"  # batch_length            bytes after this field, to the end of the batch
    "i"  # partition_leader_epoch  epoch of the leader that appended it; set by the broker
    "b"  # magic                   format version: 2
    "I"  # crc                     CRC-32C of attributes .. end of batch
    "h"  # attributes              bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control,
    #                                   6 delete horizon (KIP-534: base_timestamp holds it)
    "i"  # last_offset_delta       offset of the last record minus base_offset
    "q"  # base_timestamp          timestamp of the first record
    "q"  # max_timestamp           largest record timestamp (or the log-append time)
    "q"  # producer_id             -1 unless idempotent / transactional
    "h"  # producer_epoch
    "i"  # base_sequence           sequence number of the first record, -1 if none
    "i"  # records_count           then the records, compressed as a whole if a codec is set
)
HEADER_SIZE = HEADER.size  # 61
BASE_OFFSET_OFFSET = 0
BATCH_LENGTH_OFFSET = struct.calcsize(">q")  # 8
LOG_OVERHEAD = struct.calcsize(">qi")  # 12: base_offset + batch_length precede the counted part
LEADER_EPOCH_OFFSET = struct.calcsize(">qi")  # 12
MAGIC_OFFSET = struct.calcsize(">qii")  # 16
CRC_OFFSET = struct.calcsize(">qiib")  # 17
ATTRIBUTES_OFFSET = struct.calcsize(">qiibI")  # 21: the CRC covers from here to the end
RECORDS_COUNT_OFFSET = HEADER_SIZE - struct.calcsize(">i")  # 57
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49: a batch with no records

BASE_OFFSET = struct.Struct(">q")
BATCH_LENGTH = struct.Struct(">i")
LEADER_EPOCH = struct.Struct(">i")
CRC = struct.Struct(">I")

MAGIC_V2 = 2
NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# KIP-534: the batch's base timestamp is the time after which its tombstones may go; set by
# the log cleaner on a batch holding tombstones when it first cleans it.
DELETE_HORIZON_BIT = 0x40


class Codec(enum.StrEnum):
    """Compression codec of a batch (attributes bits 0-2); compares equal to its name."""

    NONE = "none"
    GZIP = "gzip"
    SNAPPY = "snappy"
    LZ4 = "lz4"
    ZSTD = "zstd"
    UNKNOWN = "unknown"

    @property
    def id(self) -> int:
        return _CODEC_IDS[self]


_CODEC_IDS = {Codec.NONE: 0, Codec.GZIP: 1, Codec.SNAPPY: 2, Codec.LZ4: 3, Codec.ZSTD: 4}
_CODEC_BY_ID = {v: k for k, v in _CODEC_IDS.items()}


def compression_codec(attributes: int) -> Codec:
    return _CODEC_BY_ID.get(attributes & CODEC_MASK, Codec.UNKNOWN)


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of a v2 record batch, as its fields appear on the wire.

    A named tuple, not a frozen dataclass: headers are parsed for every batch produced, fetched
    and recovered, and a tuple is built from ``struct.unpack_from`` in one step instead of one
    ``object.__setattr__`` per field.
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch, both length-prefix fields included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def codec(self) -> Codec:
        return compression_codec(self.attributes)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """When this batch's tombstones may be removed (KIP-534), None when not yet set."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


def last_offset(header: BatchHeader) -> int:
    return header.last_offset


def next_offset(header: BatchHeader) -> int:
    return header.next_offset


def read_header(buf: Buffer, pos: int = 0) -> BatchHeader:
    """The header of the batch at ``pos``; checks only that it is there and is magic 2."""
    if pos < 0 or len(buf) - pos < HEADER_SIZE:
        # A legacy message may be shorter than a v2 header: it is refused for its magic.
        if pos >= 0 and len(buf) - pos > MAGIC_OFFSET and buf[pos + MAGIC_OFFSET] in (0, 1):
            raise InvalidRecordError(f"message magic {buf[pos + MAGIC_OFFSET]} is not supported")
        raise CorruptMessageError(f"truncated batch header at byte {pos}")
    magic = struct.unpack_from(">b", buf, pos + MAGIC_OFFSET)[0]
    if magic in (0, 1):
        raise InvalidRecordError(f"record batch magic {magic} is not supported; use magic 2")
    if magic != MAGIC_V2:
        raise CorruptMessageError(f"invalid magic {magic} in record batch at byte {pos}")
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def crc_of(buf: Buffer, pos: int, header: BatchHeader) -> int:
    """The CRC-32C the batch at ``pos`` should carry."""
    return int(crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + header.size]))


def iter_batches(buf: Buffer) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole batch; raises on a truncated or inconsistent one."""
    pos = 0
    end = len(buf)
    while pos < end:
        header = read_header(buf, pos)
        if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > end:
            raise CorruptMessageError(
                f"batch at byte {pos} claims {header.batch_length} bytes, {end - pos} remain"
            )
        yield pos, header
        pos += header.size


def check_batch(buf: Buffer, pos: int, header: BatchHeader) -> None:
    """Checks that need no trust in the sender: a known codec and an intact CRC."""
    if header.codec is Codec.UNKNOWN:
        raise InvalidRecordError(f"record batch at byte {pos} names an unknown codec")
    if crc_of(buf, pos, header) != header.crc:
        raise CorruptMessageError(f"record batch at byte {pos} failed its CRC check")


def validate(buf: Buffer, max_batch_bytes: int, *, from_client: bool = True) -> list[BatchHeader]:
    """Check a produce payload (or, with ``from_client=False``, a leader's batches).

    Whole v2 batches, CRCs intact, each batch within ``max_batch_bytes``. Client batches must
    also start at offset 0, have a record count matching their offset range and not be control
    batches. Returns the headers in order.
    """
    if not buf:
        raise CorruptMessageError("the request carries no record batch")
    headers = []
    for pos, header in iter_batches(buf):
        if header.size > max_batch_bytes:
            raise MessageTooLargeError(
                f"record batch of {header.size} bytes exceeds max.message.bytes {max_batch_bytes}"
            )
        if header.last_offset_delta < 0:
            raise InvalidRecordError(f"batch at byte {pos} has a negative last offset delta")
        if from_client:
            _check_client_batch(pos, header)
        check_batch(buf, pos, header)
        headers.append(header)
    return headers


def _check_client_batch(pos: int, header: BatchHeader) -> None:
    if header.base_offset != 0:
        raise InvalidRecordError(
            f"the base offset of a produced batch must be 0, batch at byte {pos} has "
            f"{header.base_offset}"
        )
    if header.records_count <= 0 or header.last_offset_delta != header.records_count - 1:
        raise InvalidRecordError(
            f"batch at byte {pos} has {header.records_count} records but last offset delta "
            f"{header.last_offset_delta}"
        )
    if header.is_control:
        raise InvalidRecordError("clients may not write control batches")


def assign_offsets(
    buf: Buffer, base_offset: int, *, leader_epoch: int = NO_PARTITION_LEADER_EPOCH
) -> bytes:
    """Rewrite each batch's base offset (consecutively from ``base_offset``) and leader epoch.

    Neither field is covered by the CRC, so the result validates exactly as the input did.
    """
    out = bytearray(buf)
    offset = base_offset
    for pos, header in iter_batches(out):
        BASE_OFFSET.pack_into(out, pos + BASE_OFFSET_OFFSET, offset)
        LEADER_EPOCH.pack_into(out, pos + LEADER_EPOCH_OFFSET, leader_epoch)
        offset += header.last_offset_delta + 1
    return bytes(out)


def record_count(buf: Buffer) -> int:
    """Records in a payload, for metrics; 0 when it does not parse."""
    try:
        return sum(h.records_count for _, h in iter_batches(buf))
    except (CorruptMessageError, InvalidRecordError):
        return 0
