"""Length-prefixed Kafka frames: a stream of bytes in, whole frames out (sans-I/O).

Every Kafka request and response is an int32 size followed by that many bytes. The decoder
checks the size before buffering the body, so a negative or oversized length costs nothing but
the error: the transport closes the connection.
"""

from __future__ import annotations

import struct

from pafka.errors import ProtocolError

SIZE = struct.Struct(">i")


def encode_frame(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Feed bytes as they arrive; take complete frames with :meth:`next_frame`."""

    __slots__ = ("_buffer", "_max_frame_bytes", "_pos")

    def __init__(self, max_frame_bytes: int) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        # Read position inside the buffer; consumed bytes are dropped lazily, not per frame.
        self._pos = 0

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer) - self._pos

    def feed(self, data: bytes) -> None:
        if self._pos and self._pos == len(self._buffer):
            self._buffer.clear()
            self._pos = 0
        self._buffer += data
        self._check_size()

    def _check_size(self) -> None:
        if len(self._buffer) - self._pos >= SIZE.size:
            (size,) = SIZE.unpack_from(self._buffer, self._pos)
            if size < 0 or size > self._max_frame_bytes:
                raise ProtocolError(
                    f"frame size {size} is outside 0..{self._max_frame_bytes} bytes"
                )

    def next_frame(self) -> bytes | None:
        """The next complete frame's payload, or None until more bytes arrive."""
        available = len(self._buffer) - self._pos
        if available < SIZE.size:
            return None
        (size,) = SIZE.unpack_from(self._buffer, self._pos)
        if size < 0 or size > self._max_frame_bytes:
            raise ProtocolError(f"frame size {size} is outside 0..{self._max_frame_bytes} bytes")
        if available < SIZE.size + size:
            return None
        start = self._pos + SIZE.size
        frame = bytes(self._buffer[start : start + size])
        self._pos = start + size
        if self._pos > 1 << 20 and self._pos * 2 > len(self._buffer):
            del self._buffer[: self._pos]
            self._pos = 0
        self._check_size()
        return frame
