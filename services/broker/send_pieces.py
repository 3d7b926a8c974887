"""Writing a connection's response pieces, file regions with ``sendfile`` where possible.

A Fetch response's large record sets arrive as file regions. When the transport holds nothing
unsent, pieces go to the socket directly: buffers with ``writev``, regions with ``os.sendfile``
from the page cache, never read into Python. When the socket is full the sender waits for it
to be writable (on a duplicate of its descriptor: both loops refuse to watch a transport's own)
and goes on; until everything it holds is out, later responses queue behind it and nothing is
written through the transport, so the byte stream keeps its order. A transport with bytes
already buffered, a TLS transport or one without a socket gets the pieces as before, regions
read with ``pread``.

A TLS transport gets what one flush holds in buffers of 64 KiB. Smaller would cost more: it
encrypts each buffer it is given into records of its own, so small responses written piece by
piece would cost a record, a MAC and a call into OpenSSL each. Larger would too: it encrypts a
whole buffer into its memory BIO before sending any of it, and that BIO reallocates (and wipes)
its memory as it grows, so a megabyte written at once is copied several times over. The
regions are read straight into the buffers, so chunking costs no copy beyond the read.

This is done with a non-blocking socket for both event loops: uvloop has no ``loop.sendfile``.
"""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Callable, Iterator, Sequence

from pafka.errors import KafkaStorageError
from pafka.protocol.wire import Buffer
from pafka.storage.region import FileRegion, close_regions

Piece = Buffer | FileRegion
TLS_CHUNK_BYTES = 64 * 1024
# writev takes at most IOV_MAX (1024 on Linux) buffers.
MAX_WRITEV_BUFFERS = 1024


def socket_fd(transport: asyncio.BaseTransport) -> int | None:
    """The descriptor to write a transport's bytes to directly, or None where that is wrong."""
    if encrypts(transport):
        return None
    sock = transport.get_extra_info("socket")
    if sock is None:
        return None
    fd: int = sock.fileno()
    return fd if fd >= 0 else None


def encrypts(transport: asyncio.BaseTransport) -> bool:
    return transport.get_extra_info("sslcontext") is not None


def tls_chunks(pieces: Sequence[Piece]) -> Iterator[bytearray]:
    """The pieces in buffers of ``TLS_CHUNK_BYTES`` (the last one shorter), regions read into
    them in place. A new buffer each: the transport may keep one it could not encrypt yet."""
    left = sum(len(piece) for piece in pieces)
    out = bytearray(min(TLS_CHUNK_BYTES, left))
    fill = 0
    for piece in pieces:
        source = piece if isinstance(piece, FileRegion) else memoryview(piece).cast("B")
        done = 0
        while done < len(source):
            take = min(len(out) - fill, len(source) - done)
            target = memoryview(out)[fill : fill + take]
            if isinstance(source, FileRegion):
                source.read_into(target, done)
            else:
                target[:] = source[done : done + take]
            fill += take
            done += take
            if fill == len(out):
                yield out
                left -= fill
                out, fill = bytearray(min(TLS_CHUNK_BYTES, left)), 0


def write_encrypted(transport: asyncio.Transport, pieces: Sequence[Piece]) -> None:
    for chunk in tls_chunks(pieces):
        transport.write(chunk)


def materialized(pieces: list[Piece], skip_bytes: int = 0) -> list[Buffer]:
    """The pieces as buffers (regions read into memory), less the first ``skip_bytes``."""
    out: list[Buffer] = []
    for i, piece in enumerate(pieces):
        skip = skip_bytes if i == 0 else 0
        if isinstance(piece, FileRegion):
            out.append(piece.read(skip))
        else:
            out.append(memoryview(piece)[skip:] if skip else piece)
    return out


class DirectSender:
    """Pieces of one connection written straight to its socket, waiting when it is full.

    ``on_stall`` runs when the socket fills with pieces still held, ``on_drain`` once all are
    out, ``on_error`` when the socket fails or a region's file shrank (its frame can then not
    be completed: the connection must end). The sender closes every region it was given.
    """

    def __init__(
        self,
        transport: asyncio.Transport,
        fd: int | None,
        *,
        on_stall: Callable[[], None],
        on_drain: Callable[[], None],
        on_error: Callable[[Exception], None],
    ) -> None:
        self._transport = transport
        self._fd = fd
        self.encrypts = encrypts(transport)
        self._on_stall, self._on_drain, self._on_error = on_stall, on_drain, on_error
        self._queue: collections.deque[Piece] = collections.deque()
        self._sent_of_first = 0  # bytes of the queue's first piece already sent
        self._watched_fd = -1  # the duplicate descriptor watched for writability
        self._closed = False

    @property
    def busy(self) -> bool:
        return bool(self._queue)

    def send(self, pieces: list[Piece]) -> None:
        if self._closed or self._transport.is_closing():
            close_regions(pieces)  # the socket may be closed already: its number is not ours
            return
        if self._queue:
            self._queue.extend(pieces)  # behind what is waiting for the socket
            return
        if self._fd is None or self._transport.get_write_buffer_size() > 0:
            try:
                if self.encrypts:
                    write_encrypted(self._transport, pieces)
                else:
                    self._transport.writelines(materialized(pieces))
            except (OSError, KafkaStorageError) as exc:
                self._on_error(exc)
            finally:
                close_regions(pieces)
            return
        self._queue.extend(pieces)
        self._pump(self._fd)

    def close(self) -> None:
        """Drop whatever is still held (the connection is gone)."""
        self._closed = True
        self._unwatch()
        close_regions(self._queue)
        self._queue.clear()

    def _pump_watched(self) -> None:
        # The duplicate, not the transport's descriptor: a transport that closed its socket
        # meanwhile (uvloop does before connection_lost) may see that number reused.
        if self._watched_fd >= 0:
            self._pump(self._watched_fd)

    def _pump(self, fd: int) -> None:
        if self._closed:
            return
        try:
            done = self._send_until_blocked(fd)
        except (OSError, KafkaStorageError) as exc:
            self.close()
            self._on_error(exc)
            return
        if done:
            if self._watched_fd >= 0:
                self._unwatch()
                self._on_drain()
        elif self._watched_fd < 0:
            self._watched_fd = os.dup(fd)
            asyncio.get_running_loop().add_writer(self._watched_fd, self._pump_watched)
            self._on_stall()

    def _unwatch(self) -> None:
        if self._watched_fd >= 0:
            fd, self._watched_fd = self._watched_fd, -1
            asyncio.get_running_loop().remove_writer(fd)
            os.close(fd)

    def _send_until_blocked(self, fd: int) -> bool:
        """Send from the queue until the socket would block; True when the queue is empty."""
        queue = self._queue
        while queue:
            first = queue[0]
            if isinstance(first, FileRegion):
                if not self._sendfile(fd, first):
                    return False
                queue.popleft()
                first.close()
                self._sent_of_first = 0
                continue
            group: list[Buffer] = []
            for piece in queue:
                if isinstance(piece, FileRegion) or len(group) == MAX_WRITEV_BUFFERS:
                    break
                group.append(piece)
            if self._sent_of_first:
                group[0] = memoryview(group[0])[self._sent_of_first :]
            try:
                sent = os.writev(fd, group)
            except BlockingIOError:
                return False
            for buffer in group:
                size = memoryview(buffer).nbytes
                if sent < size:
                    self._sent_of_first += sent
                    return False
                sent -= size
                queue.popleft()
                self._sent_of_first = 0
        return True

    def _sendfile(self, fd: int, region: FileRegion) -> bool:
        """Send the rest of ``region``; True when all of it is out."""
        while self._sent_of_first < region.length:
            done = self._sent_of_first
            try:
                sent = os.sendfile(fd, region.fileno(), region.offset + done, region.length - done)
            except BlockingIOError:
                return False
            if sent == 0:
                raise KafkaStorageError(f"file region shrank after {done} of {region.length} bytes")
            self._sent_of_first += sent
        return True
