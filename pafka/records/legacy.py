"""Kafka's message sets of magic 0 (0.8) and magic 1 (0.10): the byte layout, reading, writing.

A message set is messages back to back, each with its log overhead::

    offset       int64   absolute offset (magic 0 inner messages too); in a magic 1 wrapper's
                         payload, inner offsets are relative (0..n-1) and the wrapper carries
                         the absolute offset of the last inner message
    message_size int32   bytes after this field
    crc          uint32  CRC-32 (zlib's, not CRC-32C) of magic .. end of the message
    magic        int8    0 or 1
    attributes   int8    bits 0-2 codec (none, gzip, snappy, lz4), bit 3 timestamp type (magic 1:
                         0 CreateTime, 1 LogAppendTime)
    timestamp    int64   magic 1 only
    key          bytes   int32 length, -1 for null
    value        bytes   int32 length, -1 for null; a compressed wrapper's value is the codec's
                         payload of an inner message set

Errors as Kafka's ``LegacyRecord`` / ``LogValidator`` answer them: a CRC mismatch, a size that
disagrees with the bytes or a magic above 1 are CORRUPT_MESSAGE; a wrapper whose inner message
is compressed again is INVALID_RECORD; zstd (magic 2 only) is UNSUPPORTED_COMPRESSION_TYPE. A
fetch response may end with a partial message (old brokers cut record sets at the byte limit),
which :func:`iter_messages` skips when asked to.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

from pafka.errors import CorruptMessageError, InvalidRecordError
from pafka.records.batch import CODEC_MASK, TIMESTAMP_TYPE_BIT, Buffer, Codec, compression_codec
from pafka.records.compression import compress, decompress

LOG_OVERHEAD = struct.Struct(
    ">"
    "q"  # offset
    "i"  # message_size: bytes from crc to the end of the message
)
HEADER_V0 = struct.Struct(
    ">"
    "I"  # crc         CRC-32 of magic .. end
    "b"  # magic       0
    "b"  # attributes  bits 0-2 codec
)
HEADER_V1 = struct.Struct(
    ">"
    "I"  # crc         CRC-32 of magic .. end
    "b"  # magic       1
    "b"  # attributes  bits 0-2 codec, bit 3 timestamp type
    "q"  # timestamp   -1 when unknown
)
CRC = struct.Struct(">I")
LENGTH = struct.Struct(">i")
MAGIC_OFFSET = LOG_OVERHEAD.size + CRC.size  # 16: the same place as a v2 batch's magic
CRC_COVERS_FROM = CRC.size  # within a message: everything after the crc
# The smallest message: header, null key, null value.
MIN_MESSAGE_SIZE_V0 = HEADER_V0.size + 2 * LENGTH.size  # 14
MIN_MESSAGE_SIZE_V1 = HEADER_V1.size + 2 * LENGTH.size  # 22
NO_TIMESTAMP = -1
LEGACY_CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4)


class Message(NamedTuple):
    """One message as it appears in a message set (a wrapper's value is still compressed)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int  # NO_TIMESTAMP for magic 0
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> Codec:
        return compression_codec(self.attributes)

    @property
    def log_append_time(self) -> bool:
        return self.magic > 0 and bool(self.attributes & TIMESTAMP_TYPE_BIT)


def _read_bytes(buf: Buffer, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + LENGTH.size > end:
        raise CorruptMessageError("message key or value length runs past the message")
    (length,) = LENGTH.unpack_from(buf, pos)
    pos += LENGTH.size
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptMessageError("message key or value runs past the message")
    return bytes(buf[pos : pos + length]), pos + length


def read_message(buf: Buffer, pos: int, offset: int, size: int) -> Message:
    """The message whose CRC starts at ``pos`` and spans ``size`` bytes (CRC checked)."""
    end = pos + size
    if size < MIN_MESSAGE_SIZE_V0:
        raise CorruptMessageError(f"message at byte {pos} of {size} bytes is too small")
    magic = buf[pos + CRC.size]
    if magic == 2:
        # A v2 batch among legacy messages: Kafka refuses mixed magics as INVALID_RECORD.
        raise InvalidRecordError(f"a magic 2 batch at byte {pos} follows legacy messages")
    if magic > 1:
        raise CorruptMessageError(f"message at byte {pos} has magic {magic}, expected 0 or 1")
    if magic == 1 and size < MIN_MESSAGE_SIZE_V1:
        raise CorruptMessageError(f"message at byte {pos} of {size} bytes is too small")
    (crc,) = CRC.unpack_from(buf, pos)
    if zlib.crc32(memoryview(buf)[pos + CRC_COVERS_FROM : end]) != crc:
        raise CorruptMessageError(f"message at byte {pos} failed its CRC check")
    if magic == 0:
        _, _, attributes = HEADER_V0.unpack_from(buf, pos)
        timestamp, body = NO_TIMESTAMP, pos + HEADER_V0.size
    else:
        _, _, attributes, timestamp = HEADER_V1.unpack_from(buf, pos)
        body = pos + HEADER_V1.size
    key, body = _read_bytes(buf, body, end)
    value, body = _read_bytes(buf, body, end)
    if body != end:
        raise CorruptMessageError(f"message at byte {pos} has {end - body} bytes after its value")
    return Message(offset, magic, attributes, timestamp, key, value)


def iter_messages(buf: Buffer, *, partial_tail: bool = False) -> Iterator[Message]:
    """The messages of a set, shallowly (wrappers not opened).

    With ``partial_tail`` a message cut off at the end is skipped, as a consumer reads an old
    fetch response; otherwise it is CORRUPT_MESSAGE, as a broker reads a produce request.
    """
    pos, end = 0, len(buf)
    while pos < end:
        if pos + LOG_OVERHEAD.size > end:
            if partial_tail:
                return
            raise CorruptMessageError(f"truncated message log overhead at byte {pos}")
        offset, size = LOG_OVERHEAD.unpack_from(buf, pos)
        start = pos + LOG_OVERHEAD.size
        if size < 0 or start + size > end:
            if partial_tail and size >= 0:
                return
            raise CorruptMessageError(f"message at byte {pos} claims {size} bytes")
        yield read_message(buf, start, offset, size)
        pos = start + size


def inner_messages(wrapper: Message) -> list[Message]:
    """The messages inside a compressed wrapper, with absolute offsets.

    A magic 1 wrapper's inner offsets are relative: the last one is the wrapper's offset. A
    magic 0 wrapper's inner messages carry whatever offsets the producer wrote (the broker
    assigns new ones).
    """
    codec = wrapper.codec
    if codec is Codec.NONE:
        return [wrapper]
    if wrapper.value is None:
        raise CorruptMessageError("compressed wrapper message has a null value")
    payload = decompress(codec, wrapper.value, wrapper.magic)
    inner = list(iter_messages(payload))
    for message in inner:
        if message.codec is not Codec.NONE:
            raise InvalidRecordError("a compressed wrapper holds a compressed message")
        if message.magic != wrapper.magic:
            raise CorruptMessageError("an inner message's magic differs from its wrapper's")
    if wrapper.magic == 0 or not inner:
        return inner
    shift = wrapper.offset - inner[-1].offset
    stamp = wrapper.timestamp if wrapper.log_append_time else None
    return [
        m._replace(offset=m.offset + shift, timestamp=m.timestamp if stamp is None else stamp)
        for m in inner
    ]


def iter_records(buf: Buffer, *, partial_tail: bool = False) -> Iterator[Message]:
    """Every message of a set with wrappers opened: what a consumer sees."""
    for message in iter_messages(buf, partial_tail=partial_tail):
        yield from inner_messages(message)


def write_message(
    out: bytearray,
    offset: int,
    magic: int,
    key: Buffer | None,
    value: Buffer | None,
    *,
    timestamp: int = NO_TIMESTAMP,
    attributes: int = 0,
) -> None:
    """Append one message (log overhead included) to ``out``."""
    start = len(out)
    out += LOG_OVERHEAD.pack(offset, 0)
    crc_at = len(out)
    if magic == 0:
        out += HEADER_V0.pack(0, 0, attributes)
    else:
        out += HEADER_V1.pack(0, 1, attributes, timestamp)
    for field in (key, value):
        if field is None:
            out += LENGTH.pack(-1)
        else:
            out += LENGTH.pack(len(field))
            out += field
    LENGTH.pack_into(out, start + struct.calcsize(">q"), len(out) - crc_at)
    CRC.pack_into(out, crc_at, zlib.crc32(memoryview(out)[crc_at + CRC_COVERS_FROM :]))


def write_wrapper(
    out: bytearray,
    codec: Codec,
    magic: int,
    inner: bytes,
    last_offset: int,
    *,
    timestamp: int = NO_TIMESTAMP,
    log_append_time: bool = False,
) -> None:
    """Append a compressed wrapper holding the message set ``inner``, whose last message has
    absolute offset ``last_offset`` (the wrapper's own offset, as Kafka writes it)."""
    attributes = codec.id & CODEC_MASK
    if log_append_time and magic > 0:
        attributes |= TIMESTAMP_TYPE_BIT
    payload = compress(codec, inner, magic)
    write_message(
        out, last_offset, magic, None, payload, timestamp=timestamp, attributes=attributes
    )
