"""Peers that misbehave on real loopback sockets, for the network-deadline tests.

``full_backlog`` is a listener whose accept queue is full, so the kernel drops every new SYN
(a connect hangs as it does behind a silent partition) until ``heal`` accepts the queued
connections. ``silent_server`` accepts and reads but never answers; ``http_server`` answers
every HTTP request with ``{}`` unless told to stay silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field


@dataclass
class FullBacklog:
    listener: socket.socket
    fillers: list[socket.socket] = field(default_factory=list)
    accepted: list[socket.socket] = field(default_factory=list)

    @property
    def port(self) -> int:
        port: int = self.listener.getsockname()[1]
        return port

    def heal(self) -> None:
        """Accept what is queued (and keep accepting), so the next SYN is answered."""
        self.listener.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                self.accepted.append(self.listener.accept()[0])
        self.listener.listen(64)

    def accept_one(self) -> bool:
        """Whether a connection completed since the heal (accepting it)."""
        try:
            self.accepted.append(self.listener.accept()[0])
        except BlockingIOError:
            return False
        return True


@contextlib.contextmanager
def full_backlog() -> Iterator[FullBacklog]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    backlog = FullBacklog(listener)
    try:
        while True:  # connect until one hangs: the queue is then full
            s = socket.socket()
            s.settimeout(0.3)
            try:
                s.connect(("127.0.0.1", backlog.port))
            except OSError:
                s.close()
                break
            backlog.fillers.append(s)
            assert len(backlog.fillers) < 64, "the accept queue never filled"
        yield backlog
    finally:
        for s in backlog.fillers + backlog.accepted:
            s.close()
        listener.close()


@dataclass
class Silent:
    port: int
    connections: int = 0
    received_bytes: int = 0


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def _serving(handle: Handler) -> AsyncIterator[int]:
    """A loopback server running ``handle`` per connection; its port. Closing it closes every
    connection it accepted."""
    writers: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            await handle(reader, writer)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for writer in writers:
            writer.close()
        await server.wait_closed()


@contextlib.asynccontextmanager
async def silent_server() -> AsyncIterator[Silent]:
    """Accepts, reads everything, answers nothing."""

    async def handle(reader: asyncio.StreamReader, _: asyncio.StreamWriter) -> None:
        state.connections += 1
        while data := await reader.read(65536):
            state.received_bytes += len(data)

    async with _serving(handle) as port:
        state = Silent(port)
        yield state


@dataclass
class Http:
    port: int
    paths: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.asynccontextmanager
async def http_server(*, silent: bool = False) -> AsyncIterator[Http]:
    """HTTP/1.1 that answers ``200 {}`` to every request, or reads them and never answers."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            state.paths.append(lines[0].split(" ")[1])
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            if not silent:
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: 2\r\n\r\n{}"
                )
                await writer.drain()

    async with _serving(handle) as port:
        state = Http(port)
        yield state


async def eventually(condition: object, timeout_s: float = 20.0) -> None:
    """Poll ``condition()`` until true; fail (never hang) after ``timeout_s``."""
    assert callable(condition)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.01)
