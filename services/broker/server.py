"""The asyncio transport of the Kafka protocol: bytes from sockets into the codec and back.

One connection is served strictly in order: the next request is not started until the previous
response is written, which is what Kafka clients rely on for ordering. A malformed frame closes
the connection; the broker keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from pafka.errors import ProtocolError
from pafka.protocol.frames import FrameDecoder

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 256 * 1024
FrameHandler = Callable[[bytes | memoryview, str], Awaitable[bytes | bytearray | None]]


class KafkaServer:
    def __init__(
        self,
        handle_frame: FrameHandler,
        *,
        max_frame_bytes: int,
        max_connections: int,
        on_connection_count: Callable[[int], None] = lambda _: None,
    ) -> None:
        self._handle_frame = handle_frame
        self._max_frame_bytes = max_frame_bytes
        self._max_connections = max_connections
        self._on_connection_count = on_connection_count
        self._connections: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port, limit=READ_CHUNK_BYTES)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        host = str(peer[0]) if peer else "unknown"
        if len(self._connections) >= self._max_connections:
            log.warning("refusing connection from %s: %d open", host, len(self._connections))
            writer.close()
            return
        self._connections.add(task)
        self._on_connection_count(len(self._connections))
        try:
            await self._loop(reader, writer, host)
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", host, exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the server is closing; ending this connection is all there is to do
        finally:
            self._connections.discard(task)
            self._on_connection_count(len(self._connections))
            writer.close()

    async def _loop(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str
    ) -> None:
        decoder = FrameDecoder(self._max_frame_bytes)
        while True:
            data = await reader.read(READ_CHUNK_BYTES)
            if not data:
                return
            decoder.feed(data)
            while (frame := decoder.next_frame()) is not None:
                response = await self._handle_frame(frame, host)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
