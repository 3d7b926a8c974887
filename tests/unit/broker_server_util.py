"""The broker transport tests' harness: a fake handler, a server on loopback, helpers.

A small fake handler stands in for the dispatcher where the broker's logic is not the point:
a request is its int32 id (plus padding), a response is that id (plus filler). Tests run on
asyncio's loop and on uvloop (:data:`on_each_loop`).
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
import uvloop

from pafka.errors import ProtocolError
from pafka.protocol.frames import encode_frame
from pafka.protocol.messages import EncodedResponse
from pafka.security.listeners import plaintext
from services.broker.server import FrameHandler, KafkaServer, _Connection

T = TypeVar("T")
ID = struct.Struct(">i")
MAX_FRAME_BYTES = 1 << 20
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
# Every test runs on both loops: the broker uses uvloop when installed, asyncio's otherwise.
on_each_loop = pytest.mark.parametrize("loop", sorted(LOOPS))


def run(loop: str, coro: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        return runner.run(coro)


class FakeHandler:
    """Answers request ``id`` with ``id`` and ``response_bytes`` of filler, in arrival order."""

    def __init__(
        self, response_bytes: int = 0, yields: Callable[[int], bool] = lambda _: True
    ) -> None:
        self.response_bytes = response_bytes
        # Whether handling request ``id`` gives the loop a turn, as a slow request does.
        self.yields = yields
        self.gate: asyncio.Event | None = None
        self.entered: list[int] = []
        self.handled: list[int] = []
        self.sizes: list[int] = []

    async def __call__(self, frame: bytes | memoryview, session: object) -> EncodedResponse:
        (ident,) = ID.unpack_from(frame)
        if ident < 0:
            raise ProtocolError("the fake protocol's malformed request")
        self.entered.append(ident)
        self.sizes.append(len(frame))
        if self.gate is not None:
            await self.gate.wait()
        if self.yields(ident):
            await asyncio.sleep(0)
        self.handled.append(ident)
        return bytearray(encode_frame(ID.pack(ident) + bytes(self.response_bytes)))


class Served:
    """A running server, the connection counts it reported and the protocol errors it counted."""

    def __init__(
        self, server: KafkaServer, port: int, counts: list[int], errors: list[int]
    ) -> None:
        self.server, self.port, self.counts, self.errors = server, port, counts, errors

    def connection(self) -> _Connection:
        (only,) = self.server._connections
        return only

    async def connect(
        self, rcvbuf_bytes: int | None = None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock = socket.socket()
        if rcvbuf_bytes is not None:  # set before connecting, so the TCP window stays small
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        return await asyncio.open_connection(sock=sock)


@asynccontextmanager
async def serving(
    handler: FrameHandler,
    max_connections: int = 10,
) -> AsyncIterator[Served]:
    counts: list[int] = [0]
    errors: list[int] = []
    server = KafkaServer(
        handler,
        max_frame_bytes=MAX_FRAME_BYTES,
        max_connections=max_connections,
        on_connection_count=counts.append,
        on_protocol_error=lambda: errors.append(1),
    )
    port = await server.start(plaintext("127.0.0.1", 0))
    try:
        yield Served(server, port, counts, errors)
    finally:
        await server.close()


async def until(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.002)


def request(ident: int, padding_bytes: int = 0) -> bytes:
    return encode_frame(ID.pack(ident) + bytes(padding_bytes))


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = ID.unpack(await reader.readexactly(4))
    return await reader.readexactly(size)


async def read_ids(reader: asyncio.StreamReader, count: int) -> list[int]:
    return [ID.unpack_from(await read_frame(reader))[0] for _ in range(count)]


def serve_tasks() -> list[asyncio.Task[Any]]:
    """The connection tasks still alive, whether or not the server still counts them."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__qualname__", "") == "_Connection._serve"
    ]
