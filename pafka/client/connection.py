"""One pipelined Kafka-protocol connection: many requests in flight, answers matched by
correlation id, on the sans-I/O codec (``pafka.protocol``).

Kafka brokers answer a connection's requests in order, so a queue of waiters in send order is
enough; the correlation id is still checked, and a mismatch closes the connection (a broker
that answers out of order cannot be trusted with the rest). Any failure fails every waiter and
marks the connection dead; the owner opens a new one.

Once open (TLS and SASL done on streams), the socket is read by a protocol of its own
(:class:`_Answers`): each answer is matched and its caller's future completed as its bytes
arrive. A reader task between the two, with the caller's wait shielded, cost each answer two
more turns of the event loop before its caller ran, and on a busy loop (a gateway at a few
thousand requests a second) every turn is a millisecond or more of latency.

No wait is unbounded: the connect has ``socket.connection.setup.timeout.ms``, every call a
deadline (``default.api.timeout.ms`` unless the caller names one), and the socket keepalive and
TCP_USER_TIMEOUT, so a broker that vanished ends the connection even while nothing is asked.
Defaults come from :mod:`pafka.net.deadlines`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import struct
import time
from typing import Any, cast

from pafka.client.secure_connect import secure_connection
from pafka.errors import BrokerConnectionError, PafkaError, ProtocolError
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.protocol.frames import FrameDecoder
from pafka.protocol.messages import decode_response, encode_request
from pafka.protocol.versions import ApiKey
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity

log = logging.getLogger(__name__)

_CORRELATION = struct.Struct(">i")
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
        self._transport: asyncio.Transport | None = None
        # Kept only so that it lives as long as the connection: a StreamWriter closes its
        # transport when it is collected.
        self._streams_writer: asyncio.StreamWriter | None = None
        self._answers: _Answers | None = None
        self._next_id = 0
        self._failure: BaseException | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def idle(self) -> bool:
        """No request sent and still unanswered (one whose caller stopped waiting included)."""
        return not self._waiting

    @property
    def alive(self) -> bool:
        return (
            self._transport is not None
            and self._failure is None
            and time.monotonic() < self._retire_at
        )

    async def open(self, timeout_s: float | None = None) -> None:
        """Connect within ``timeout_s`` (default ``socket.connection.setup.timeout.ms``)."""
        if timeout_s is None:
            timeout_s = self.network.connection_setup_timeout_ms / 1000
        try:
            _, writer, lifetime_ms = await secure_connection(
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
        if lifetime_ms > 0:
            self._retire_at = time.monotonic() + lifetime_ms * RETIRE_FRACTION / 1000
        transport = cast(asyncio.Transport, writer.transport)  # uvloop's is not a subclass
        # Nothing is due before the first request (a broker speaks only when asked), so the
        # streams hold no answer bytes to hand over.
        self._answers = _Answers(self)
        transport.set_protocol(self._answers)
        self._transport = transport
        self._streams_writer = writer

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
                future = self._send(api, version, body, raw)
                assert self._answers is not None
                if self._answers.writing_paused:
                    try:
                        await self._answers.drained()
                    except BaseException:
                        future.cancel()  # its answer, should one come, is dropped in turn
                        raise
                # Not shielded: a caller that stops waiting cancels its future, and its answer,
                # still matched in turn, is dropped.
                return await future
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

    def _send(self, api: ApiKey, version: int, body: Any, raw: bool = False) -> asyncio.Future[Any]:
        if not self.alive:
            raise BrokerConnectionError(f"connection to {self.host}:{self.port} is closed")
        assert self._transport is not None
        self._next_id = (self._next_id + 1) & 0x7FFFFFFF
        correlation_id = self._next_id
        frame = encode_request(api, version, body, correlation_id, self.client_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # Queued and written with no wait between: waiters stay in the order frames are sent.
        self._waiting.append((correlation_id, api, version, future, raw))
        self._transport.write(frame)
        return future

    def _deliver(self, frame: bytes | memoryview) -> None:
        if not self._waiting:
            raise ProtocolError(f"{self.host}:{self.port} sent an unrequested response")
        correlation_id, api, version, future, raw = self._waiting.popleft()
        (got,) = _CORRELATION.unpack_from(frame, 0)
        if got != correlation_id:
            error = ProtocolError(f"expected correlation id {correlation_id}, got {got}")
            # Already taken from the queue: failed here, or _fail would never reach it.
            if not future.done():
                future.set_exception(BrokerConnectionError(str(error)))
            raise error
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
        if self._answers is not None:
            self._answers.wake_writers()
        if self._transport is not None:
            self._transport.close()

    async def close(self) -> None:
        self._fail(BrokerConnectionError("closed"))


class _Answers(asyncio.Protocol):
    """An open connection's reading side: frames decoded and delivered as bytes arrive, and the
    transport's write flow control for callers that must wait for it."""

    def __init__(self, connection: BrokerConnection) -> None:
        self._connection = connection
        self._decoder = FrameDecoder(MAX_RESPONSE_BYTES)
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.writing_paused = False

    def data_received(self, data: bytes) -> None:
        connection = self._connection
        try:
            self._decoder.feed(data)
            while (frame := self._decoder.next_frame()) is not None:
                connection._deliver(frame)
        except PafkaError as exc:
            connection._fail(exc)

    def eof_received(self) -> bool:
        self._connection._fail(
            BrokerConnectionError(f"{self._connection.address} closed the connection")
        )
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f": {exc}" if exc is not None else ""
        self._connection._fail(
            BrokerConnectionError(f"connection to {self._connection.address} lost{reason}")
        )

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.wake_writers()

    async def drained(self) -> None:
        """Return once the transport takes writes again, or the connection has failed (the
        caller's answer then carries the error)."""
        if self._connection._failure is not None:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def wake_writers(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
