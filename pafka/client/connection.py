"""One pipelined Kafka-protocol connection: many requests in flight, answers matched by
correlation id, on the sans-I/O codec (``pafka.protocol``).

Kafka brokers answer a connection's requests in order, so a queue of waiters in send order is
enough; the correlation id is still checked, and a mismatch closes the connection (a broker
that answers out of order cannot be trusted with the rest). Any failure fails every waiter and
marks the connection dead; the owner opens a new one.

No wait is unbounded: the connect has ``socket.connection.setup.timeout.ms``, every call a
deadline (``default.api.timeout.ms`` unless the caller names one), and the socket keepalive and
TCP_USER_TIMEOUT, so a broker that vanished ends the connection even while nothing is asked.
Defaults come from :mod:`pafka.net.deadlines`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import struct
import time
from typing import Any

from pafka.client.secure_connect import secure_connection
from pafka.errors import BrokerConnectionError, PafkaError, ProtocolError
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.protocol.frames import FrameDecoder
from pafka.protocol.messages import decode_response, encode_request
from pafka.protocol.versions import ApiKey
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity

log = logging.getLogger(__name__)

_CORRELATION = struct.Struct(">i")
READ_CHUNK_BYTES = 256 * 1024
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
# Share of a bounded SASL session after which a connection takes no new request, leaving the
# requests in flight time to finish before the broker would close it.
RETIRE_FRACTION = 0.85


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        max_in_flight: int = 64,
        network: NetworkDeadlines = DEFAULT_DEADLINES,
        security: ClientSecurity = PLAINTEXT_CLIENT,
    ) -> None:
        self.host = host
        self.security = security
        # Loop time after which no new request is sent here (the broker's SASL session ends
        # soon after): the owner opens a fresh connection instead.
        self._retire_at = math.inf
        self.port = port
        self.client_id = client_id
        self.network = network
        self._slots = asyncio.Semaphore(max_in_flight)
        # (correlation id, API, version, the caller's future, whether it takes the raw frame)
        self._waiting: collections.deque[tuple[int, ApiKey, int, asyncio.Future[Any], bool]] = (
            collections.deque()
        )
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._next_id = 0
        self._failure: BaseException | None = None
        self._write_lock = asyncio.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return (
            self._writer is not None
            and self._failure is None
            and time.monotonic() < self._retire_at
        )

    async def open(self, timeout_s: float | None = None) -> None:
        """Connect within ``timeout_s`` (default ``socket.connection.setup.timeout.ms``)."""
        if timeout_s is None:
            timeout_s = self.network.connection_setup_timeout_ms / 1000
        try:
            reader, writer, lifetime_ms = await secure_connection(
                self.host,
                self.port,
                self.security,
                client_id=self.client_id,
                setup_timeout_s=timeout_s,
                keepalive=self.network.keepalive,
                # A call may legitimately wait this long for its answer; unacknowledged bytes
                # for longer mean the broker is gone.
                user_timeout_ms=self.network.default_api_timeout_ms,
            )
        except OSError as exc:
            raise BrokerConnectionError(
                f"cannot connect to {self.host}:{self.port}: {exc}"
            ) from exc
        self._writer = writer
        if lifetime_ms > 0:
            self._retire_at = time.monotonic() + lifetime_ms * RETIRE_FRACTION / 1000
        self._reader_task = asyncio.create_task(self._read(reader))

    async def call(
        self,
        api: ApiKey,
        version: int,
        body: Any,
        timeout_s: float | None = None,
        *,
        raw: bool = False,
    ) -> Any:
        """Send one request and wait for its decoded response body, at most ``timeout_s``
        (default ``default.api.timeout.ms``) from the call, queueing for a slot included.
        ``raw``: the response frame itself (from the correlation id on, a read-only view),
        for callers that decode it by hand."""
        if timeout_s is None:
            timeout_s = self.network.default_api_timeout_ms / 1000
        future: asyncio.Future[Any] | None = None
        try:
            async with asyncio.timeout(timeout_s), self._slots:
                future = await self._send(api, version, body, raw)
                assert self._writer is not None
                try:
                    await self._writer.drain()
                except (OSError, ConnectionError) as exc:
                    self._fail(BrokerConnectionError(f"{self.host}:{self.port}: {exc}"))
                    raise BrokerConnectionError(f"{self.host}:{self.port}: {exc}") from exc
                return await asyncio.shield(future)
        except TimeoutError as exc:
            if future is not None:
                future.cancel()  # nobody will read its outcome now
                # Sent: the answer may still come, and would be matched to a later request.
                self._fail(
                    BrokerConnectionError(f"{self.host}:{self.port}: no answer in {timeout_s:g}s")
                )
            raise BrokerConnectionError(
                f"{api.name} to {self.host}:{self.port} timed out after {timeout_s:g}s"
            ) from exc

    async def _send(
        self, api: ApiKey, version: int, body: Any, raw: bool = False
    ) -> asyncio.Future[Any]:
        if not self.alive:
            raise BrokerConnectionError(f"connection to {self.host}:{self.port} is closed")
        assert self._writer is not None
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        correlation_id = self._next_id
        frame = encode_request(api, version, body, correlation_id, self.client_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        async with self._write_lock:  # waiters must queue in the order frames are sent
            self._waiting.append((correlation_id, api, version, future, raw))
            self._writer.write(frame)
        return future

    async def _read(self, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(MAX_RESPONSE_BYTES)
        try:
            while True:
                data = await reader.read(READ_CHUNK_BYTES)
                if not data:
                    raise BrokerConnectionError(f"{self.host}:{self.port} closed the connection")
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self._deliver(frame)
        except (OSError, PafkaError) as exc:
            self._fail(exc if isinstance(exc, PafkaError) else BrokerConnectionError(str(exc)))
        except asyncio.CancelledError:
            self._fail(BrokerConnectionError("connection closed"))

    def _deliver(self, frame: bytes | memoryview) -> None:
        if not self._waiting:
            raise ProtocolError(f"{self.host}:{self.port} sent an unrequested response")
        correlation_id, api, version, future, raw = self._waiting.popleft()
        (got,) = _CORRELATION.unpack_from(frame, 0)
        if got != correlation_id:
            raise ProtocolError(f"expected correlation id {correlation_id}, got {got}")
        if raw:
            if not future.done():
                future.set_result(frame)
            return
        try:
            response = decode_response(api, version, frame)
        except ProtocolError as exc:
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(response)

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
            log.debug("connection to %s:%d failed: %s", self.host, self.port, exc)
        while self._waiting:
            future = self._waiting.popleft()[3]
            if not future.done():
                future.set_exception(BrokerConnectionError(str(exc)))
        if self._writer is not None:
            self._writer.close()

    async def close(self) -> None:
        self._fail(BrokerConnectionError("closed"))
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader_task
