"""Writing a connection's response pieces, file regions with ``sendfile`` where possible.

A Fetch response's large record sets arrive as file regions. When the transport holds nothing
unsent, the pieces go to the socket directly: buffers with one ``writev``, regions with
``os.sendfile`` from the page cache, never read into Python. The first piece the socket does
not take whole, and everything after it, go to the transport as today (regions read with
``pread``), so the byte stream is the same and the transport keeps the order from there on.
Writing straight to the socket is safe only while the transport's buffer is empty; a TLS
transport or one without a socket always takes the transport's path.

This is done synchronously for both event loops: uvloop has no ``loop.sendfile`` and a
non-blocking ``sendfile`` needs no waiting, the transport taking over any remainder.
"""

from __future__ import annotations

import asyncio
import os

from pafka.errors import KafkaStorageError
from pafka.protocol.wire import Buffer
from pafka.storage.region import FileRegion

Piece = Buffer | FileRegion
# writev takes at most IOV_MAX (1024 on Linux) buffers.
MAX_WRITEV_BUFFERS = 1024


def socket_fd(transport: asyncio.BaseTransport) -> int | None:
    """The descriptor to write a transport's bytes to directly, or None where that is wrong."""
    if transport.get_extra_info("sslcontext") is not None:
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    fd: int = sock.fileno()
    return fd if fd >= 0 else None


def write_pieces(transport: asyncio.Transport, fd: int | None, pieces: list[Piece]) -> None:
    """Write ``pieces`` in order; the caller closes their regions afterwards.

    Raises OSError when the socket fails, KafkaStorageError when a region's file shrank (its
    frame can then not be completed: the connection must be dropped).
    """
    index, sent = 0, 0
    if fd is not None and transport.get_write_buffer_size() == 0:
        index, sent = _send_directly(fd, pieces)
    if index == len(pieces):
        return
    rest: list[Buffer] = []
    for i in range(index, len(pieces)):
        piece = pieces[i]
        skip = sent if i == index else 0
        if isinstance(piece, FileRegion):
            rest.append(piece.read(skip))
        else:
            rest.append(memoryview(piece)[skip:] if skip else piece)
    transport.writelines(rest)


def _send_directly(fd: int, pieces: list[Piece]) -> tuple[int, int]:
    """Send to the socket until it would block: (index of the first piece not sent whole,
    bytes of it sent)."""
    index = 0
    while index < len(pieces):
        piece = pieces[index]
        if isinstance(piece, FileRegion):
            sent = _sendfile(fd, piece)
            if sent < len(piece):
                return index, sent
            index += 1
            continue
        end = index + 1
        while (
            end < len(pieces)
            and not isinstance(pieces[end], FileRegion)
            and end - index < MAX_WRITEV_BUFFERS
        ):
            end += 1
        group: list[Buffer] = [p for p in pieces[index:end] if not isinstance(p, FileRegion)]
        try:
            sent = os.writev(fd, group)
        except BlockingIOError:
            sent = 0
        for buffer in group:
            size = len(buffer) if not isinstance(buffer, memoryview) else buffer.nbytes
            if sent < size:
                return index, sent
            sent -= size
            index += 1
    return index, 0


def _sendfile(fd: int, region: FileRegion) -> int:
    done = 0
    while done < region.length:
        try:
            sent = os.sendfile(fd, region.fileno(), region.offset + done, region.length - done)
        except BlockingIOError:
            break
        if sent == 0:
            raise KafkaStorageError(f"file region shrank after {done} of {region.length} bytes")
        done += sent
    return done
