"""Length-prefixed Kafka frames: a stream of bytes in, whole frames out (sans-I/O).

Every Kafka request and response is an int32 size followed by that many bytes. The decoder
checks the size before buffering the body, so a negative or oversized length costs nothing but
the error: the transport closes the connection.

Frames are handed out as read-only views into the chunks the transport received, so a chunk
holding many small requests is not copied at all; only a frame split across chunks is joined,
once, when its last byte arrives.
"""

from __future__ import annotations

import struct

from pafka.errors import ProtocolError

SIZE = struct.Struct(">i")


def encode_frame(payload: bytes) -> bytes:
    return SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Feed bytes as they arrive; take complete frames with :meth:`next_frame`."""

    __slots__ = ("_data", "_max_frame_bytes", "_parts", "_parts_bytes", "_pos", "_wanted")

    def __init__(self, max_frame_bytes: int) -> None:
        self._max_frame_bytes = max_frame_bytes
        # The chunk being cut into frames, from _pos on; never mutated, so views stay valid.
        self._data: bytes = b""
        self._pos = 0
        # An incomplete frame's chunks, joined only once _wanted bytes are there.
        self._parts: list[bytes] = []
        self._parts_bytes = 0
        self._wanted = 0

    @property
    def buffered_bytes(self) -> int:
        return len(self._data) - self._pos + self._parts_bytes

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if self._parts:
            self._parts.append(bytes(data))
            self._parts_bytes += len(data)
            if self._parts_bytes < self._wanted:
                return
            self._data = b"".join(self._parts)
            self._parts, self._parts_bytes = [], 0
        elif self._pos < len(self._data):
            self._data = self._data[self._pos :] + data
        else:
            self._data = bytes(data)
        self._pos = 0
        self._check_size(self._data, 0)

    def _check_size(self, buf: bytes, pos: int) -> int:
        """The size of the frame at ``pos`` (-1 until its prefix is complete); refuses bad ones."""
        if len(buf) - pos < SIZE.size:
            return -1
        (size,) = SIZE.unpack_from(buf, pos)
        if size < 0 or size > self._max_frame_bytes:
            raise ProtocolError(f"frame size {size} is outside 0..{self._max_frame_bytes} bytes")
        return int(size)

    def next_frame(self) -> memoryview | None:
        """The next complete frame's payload, or None until more bytes arrive."""
        if self._parts:
            return None
        data, pos = self._data, self._pos
        size = self._check_size(data, pos)
        end = pos + SIZE.size + size
        if size < 0 or end > len(data):
            if pos < len(data):
                # Keep the partial frame aside; it is joined with what follows once whole.
                tail = data[pos:] if pos else data
                self._parts, self._parts_bytes = [tail], len(tail)
                self._wanted = SIZE.size + size if size >= 0 else SIZE.size
            self._data, self._pos = b"", 0
            return None
        self._pos = end
        return memoryview(data)[pos + SIZE.size : end]
