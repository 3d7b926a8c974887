"""Kafka's primitive wire types, read from a buffer at a position and appended to a bytearray.

Only what the hand-written hot paths (:mod:`pafka.protocol.produce_codec`,
:mod:`pafka.protocol.fetch_codec`) need. "Classic" encodings prefix strings with an int16 and
bytes and arrays with an int32 (-1 = null); "compact" (flexible versions, KIP-482) prefix them
with an unsigned varint of length + 1 (0 = null) and end every struct with tagged fields.
Every reader raises :class:`ProtocolError` on bytes that end early or lengths that cannot be.
"""

from __future__ import annotations

import struct

from pafka.errors import ProtocolError

Buffer = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
NO_TAGGED_FIELDS = b"\x00"
HEADER_FIXED_BYTES = 8  # a request header's api_key, api_version, correlation_id


class Reader:
    """A cursor over one frame; each read advances it."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: memoryview, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def _take(self, size: int) -> int:
        start = self.pos
        if size < 0 or start + size > len(self.buf):
            raise ProtocolError(f"field of {size} bytes at byte {start} runs past the frame")
        self.pos = start + size
        return start

    def int8(self) -> int:
        value: int = INT8.unpack_from(self.buf, self._take(1))[0]
        return value

    def int16(self) -> int:
        value: int = INT16.unpack_from(self.buf, self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = INT32.unpack_from(self.buf, self._take(4))[0]
        return value

    def int64(self) -> int:
        value: int = INT64.unpack_from(self.buf, self._take(8))[0]
        return value

    def uvarint(self) -> int:
        value = shift = 0
        buf = self.buf
        while True:
            if self.pos >= len(buf):
                raise ProtocolError("varint runs past the frame")
            byte = buf[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ProtocolError("varint longer than 5 bytes")

    def _text(self, size: int) -> str:
        start = self._take(size)
        try:
            return str(self.buf[start : start + size], "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"string at byte {start} is not UTF-8") from exc

    def nullable_string(self, compact: bool) -> str | None:
        size = self.uvarint() - 1 if compact else self.int16()
        return None if size < 0 else self._text(size)

    def string(self, compact: bool) -> str:
        text = self.nullable_string(compact)
        if text is None:
            raise ProtocolError(f"null where a string is required, before byte {self.pos}")
        return text

    def nullable_bytes(self, compact: bool) -> memoryview | None:
        size = self.uvarint() - 1 if compact else self.int32()
        if size < 0:
            return None
        start = self._take(size)
        return self.buf[start : start + size]

    def array_length(self, compact: bool) -> int:
        """Items in the array that follows; -1 for null."""
        count = self.uvarint() - 1 if compact else self.int32()
        # Every item takes at least one byte, so a count beyond the frame is a lie.
        if count > len(self.buf) - self.pos:
            raise ProtocolError(f"array of {count} items cannot fit in the frame")
        return max(count, -1)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_string(out: bytearray, text: str | None, compact: bool) -> None:
    if text is None:
        if compact:
            out.append(0)
        else:
            out += INT16.pack(-1)
        return
    data = text.encode()
    if compact:
        write_uvarint(out, len(data) + 1)
    else:
        out += INT16.pack(len(data))
    out += data


def write_bytes(out: bytearray, data: Buffer | None, compact: bool) -> None:
    if data is None:
        if compact:
            out.append(0)
        else:
            out += INT32.pack(-1)
        return
    write_bytes_length(out, len(data), compact)
    out += data


def write_bytes_length(out: bytearray, size: int, compact: bool) -> None:
    """The length prefix of non-null bytes, for callers that send the bytes separately."""
    if compact:
        write_uvarint(out, size + 1)
    else:
        out += INT32.pack(size)


def write_array_length(out: bytearray, count: int | None, compact: bool) -> None:
    if compact:
        write_uvarint(out, 0 if count is None else count + 1)
    else:
        out += INT32.pack(-1 if count is None else count)


def start_response(correlation_id: int, flexible: bool) -> bytearray:
    """A response frame's size placeholder and response header; see :func:`end_frame`."""
    out = bytearray(INT32.pack(0))
    out += INT32.pack(correlation_id)
    if flexible:
        out += NO_TAGGED_FIELDS
    return out


def end_frame(out: bytearray) -> bytearray:
    """Fill in the size of a frame begun with :func:`start_response`."""
    INT32.pack_into(out, 0, len(out) - INT32.size)
    return out
