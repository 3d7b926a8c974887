"""One socket write per small HTTP answer instead of two.

uvicorn writes a response's status line and headers, then its body, as two transport writes:
two ``send`` calls (and, on a TCP_NODELAY socket, two segments) per answer, which cost a
one-record produce more than its whole parse. :class:`CoalescingTransport` holds a small
response head (a write ending in the blank line that ends a head) for the rest of the current
turn of the event loop: the next write joins it (so the head and a small body go out as one),
and whatever is still held goes out at the end of the turn (a HEAD answer, a head alone) or
before the connection closes. Any other write goes out at once: a chunk of a streamed body
(a follow read's batches) has no head to join, and holding it to the end of the turn would
only delay it behind whatever else the turn runs. The bytes and their order are unchanged;
only their grouping into writes differs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# Held at most this much at once: a response head and a small body. Larger bodies are written
# as they come (joining would copy them for one syscall saved).
HOLD_LIMIT_BYTES = 16 * 1024
_HEAD_END = b"\r\n\r\n"


class CoalescingTransport:
    """Wraps ``transport``: every method but the writes and closes is the transport's own."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if len(data) + len(held) <= HOLD_LIMIT_BYTES:
                self._transport.write(held + bytes(data))
                return
            self._transport.write(held)
        if len(data) <= HOLD_LIMIT_BYTES and _ends_head(data) and not self._transport.is_closing():
            self._held = bytes(data)
            asyncio.get_running_loop().call_soon(self.flush)
            return
        self._transport.write(data)

    def write_now(self, data: bytes) -> None:
        """Written at once, after anything held: a whole answer has nothing to wait for."""
        self.flush()
        if not self._transport.is_closing():
            self._transport.write(data)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def is_closing(self) -> bool:  # asked on every answer: not through __getattr__
        return self._transport.is_closing()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _ends_head(data: bytes | bytearray | memoryview) -> bool:
    return bytes(data[-4:]) == _HEAD_END


class CoalescingHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through a :class:`CoalescingTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport))  # type: ignore[arg-type]
