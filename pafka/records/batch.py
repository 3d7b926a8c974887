"""Kafka's v2 record batch (magic 2): the header layout, validation and offset assignment.

A batch as a producer sends it and as pafka stores and serves it, byte for byte::

    offset  size  field
    0       8     base_offset             first offset; the broker rewrites it on append
    8       4     batch_length            bytes after this field
    12      4     partition_leader_epoch  set by the leader on append
    16      1     magic                   2
    17      4     crc                     CRC-32C of everything from attributes to the end
    21      2     attributes              bits 0-2 codec, 3 timestamp type, 4 txn, 5 control
    23      4     last_offset_delta
    27      8     base_timestamp
    35      8     max_timestamp
    43      8     producer_id             -1 when not idempotent
    51      2     producer_epoch
    53      4     base_sequence
    57      4     records_count
    61      ...   records (compressed as a whole when a codec is set)

The CRC does not cover base_offset, batch_length or partition_leader_epoch, which is why the
broker can assign offsets and stamp the leader epoch without touching the payload.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from pafka.errors import CorruptMessageError, InvalidRecordError, MessageTooLargeError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = struct.calcsize(">qi")  # base_offset + batch_length: 12
CRC_OFFSET = struct.calcsize(">qiib")  # 17
ATTRIBUTES_OFFSET = CRC_OFFSET + 4  # 21: where the CRC's coverage starts
LEADER_EPOCH_OFFSET = struct.calcsize(">qi")  # 12
MAGIC_OFFSET = struct.calcsize(">qii")  # 16
BASE_OFFSET = struct.Struct(">q")
LEADER_EPOCH = struct.Struct(">i")
BATCH_LENGTH = struct.Struct(">i")

MAGIC_V2 = 2
CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(frozen=True, slots=True)
class BatchHeader:
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
    def codec(self) -> str:
        return CODECS.get(self.attributes & CODEC_MASK, "unknown")

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptMessageError(f"truncated batch header at byte {pos}")
    magic = buf[pos + MAGIC_OFFSET]
    if magic != MAGIC_V2:
        raise InvalidRecordError(f"record batch magic {magic} is not supported; use magic 2")
    return BatchHeader(*HEADER.unpack_from(buf, pos))


def crc_of(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> int:
    return crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + header.size])


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each whole batch; raises on a truncated or inconsistent one."""
    pos = 0
    end = len(buf)
    while pos < end:
        header = read_header(buf, pos)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > end:
            raise CorruptMessageError(
                f"batch at byte {pos} claims {header.batch_length} bytes, {end - pos} remain"
            )
        yield pos, header
        pos += header.size


def validate(buf: bytes | bytearray | memoryview, max_batch_bytes: int) -> list[BatchHeader]:
    """Check a produce payload: whole v2 batches, sane fields, CRCs, sizes. Returns headers."""
    if not buf:
        raise CorruptMessageError("produce request carries no record batch")
    headers = []
    for pos, header in iter_batches(buf):
        if header.size > max_batch_bytes:
            raise MessageTooLargeError(
                f"record batch of {header.size} bytes exceeds max.message.bytes {max_batch_bytes}"
            )
        if header.records_count <= 0 or header.last_offset_delta != header.records_count - 1:
            raise CorruptMessageError(
                f"batch at byte {pos} has {header.records_count} records but last offset delta "
                f"{header.last_offset_delta}"
            )
        if crc_of(buf, pos, header) != header.crc:
            raise CorruptMessageError(f"record batch at byte {pos} failed its CRC check")
        if header.codec == "unknown":
            raise CorruptMessageError(f"record batch at byte {pos} names an unknown codec")
        headers.append(header)
    return headers


def assign_offsets(buf: bytes, base_offset: int, leader_epoch: int) -> tuple[bytes, int]:
    """Rewrite each batch's base offset (consecutively from ``base_offset``) and leader epoch.

    Returns the rewritten bytes and the next offset. Neither field is covered by the CRC.
    """
    out = bytearray(buf)
    offset = base_offset
    for pos, header in iter_batches(out):
        BASE_OFFSET.pack_into(out, pos, offset)
        LEADER_EPOCH.pack_into(out, pos + LEADER_EPOCH_OFFSET, leader_epoch)
        offset += header.last_offset_delta + 1
    return bytes(out), offset


def record_count(buf: bytes | bytearray | memoryview) -> int:
    try:
        return sum(h.records_count for _, h in iter_batches(buf))
    except (CorruptMessageError, InvalidRecordError):
        return 0
