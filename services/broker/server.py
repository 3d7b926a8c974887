"""The asyncio transport of the Kafka protocol: bytes from sockets into the codec and back.

One connection is served strictly in order: requests are handled one after another by the
connection's task, which is what Kafka clients rely on for ordering. A malformed frame closes
the connection; the broker keeps serving everyone else.

Cost per request is what limits a Python broker, so the transport is a plain
:class:`asyncio.Protocol` rather than streams: frames are views into the received chunks (no
copy per frame), and the responses of all requests handled in one turn of the event loop (a
client pipelining several) leave in one transport write, flushed as soon as the connection's
task waits for anything or 64 KiB of them are pending. Reading pauses while too many requests
are queued, and handling pauses while the client does not take its responses, so neither
direction buffers without bound. Record sets that come as file regions are sent with
``sendfile`` when nothing is queued before them (see :mod:`services.broker.send_pieces`).

Accepted sockets get TCP keepalive (Kafka sets SO_KEEPALIVE), so a client that vanished without
a FIN is reaped instead of holding a connection slot forever, and a connection with no request
for ``connections.max.idle.ms`` is closed, as Kafka's selector does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import NamedTuple, cast

from pafka.errors import ProtocolError
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.net.sockets import configure_keepalive
from pafka.protocol.frames import FrameDecoder
from pafka.protocol.messages import EncodedResponse
from pafka.protocol.wire import Buffer
from pafka.security.listeners import Endpoint
from pafka.security.sasl_state import SaslState
from pafka.security.tls import principal_of
from pafka.storage.region import FileRegion, close_regions
from services.broker.send_pieces import DirectSender, Piece, socket_fd
from services.broker.session import ConnectionSession
from services.broker.tls_accept import HandshakeKey, TlsAcceptor, listening_socket

log = logging.getLogger(__name__)


class Throttled(NamedTuple):
    """A response after which the connection is not read for ``mute_ms`` (a client over its
    quota, KIP-219: Kafka mutes the channel once the response is sent)."""

    response: EncodedResponse | None
    mute_ms: int


FrameHandler = Callable[
    [bytes | memoryview, ConnectionSession], Awaitable[EncodedResponse | Throttled | None]
]
# Requests received but not yet handled, per connection, before reading pauses.
MAX_QUEUED_REQUESTS = 64
# Responses made in one loop turn beyond this are written at once, so that a client not reading
# pauses handling (pause_writing) instead of a turn's responses piling up in Python.
MAX_PENDING_RESPONSE_BYTES = 64 * 1024
# Idle connections are looked for this many times per connections.max.idle.ms (at least once
# every 30 s), so one lives at most a fraction longer than the limit.
IDLE_CHECKS_PER_LIMIT = 10


class KafkaServer:
    def __init__(
        self,
        handle_frame: FrameHandler,
        *,
        max_frame_bytes: int,
        max_connections: int,
        on_connection_count: Callable[[int], None] = lambda _: None,
        on_protocol_error: Callable[[], None] = lambda: None,
        network: NetworkDeadlines = DEFAULT_DEADLINES,
        authentication_timeout_ms: int = 30_000,
        failed_authentication_delay_ms: int = 100,
    ) -> None:
        self._handle_frame = handle_frame
        # A connection still unauthenticated (TLS or SASL) this long after it opened is closed.
        self.authentication_timeout_s = authentication_timeout_ms / 1000
        self.failed_authentication_delay_s = failed_authentication_delay_ms / 1000
        # Malformed frames are caught here, before any handler sees them, so counted here too.
        self._on_protocol_error = on_protocol_error
        self._max_frame_bytes = max_frame_bytes
        self._max_connections = max_connections
        self._on_connection_count = on_connection_count
        self._connections: set[_Connection] = set()
        # TLS connections accepted, counted, and still in their handshake (tls_accept.py).
        self._handshaking: set[HandshakeKey] = set()
        self._servers: list[asyncio.Server] = []
        self._acceptors: list[TlsAcceptor] = []
        self.network = network
        self._idle_sweeper: asyncio.Task[None] | None = None

    async def start(self, endpoint: Endpoint, ssl_context: ssl.SSLContext | None = None) -> int:
        """Listen on one listener; returns the port bound (the one chosen for port 0)."""
        loop = asyncio.get_running_loop()
        if self._idle_sweeper is None:
            self._idle_sweeper = loop.create_task(self._close_idle())
        if ssl_context is not None:
            acceptor = TlsAcceptor(
                listening_socket(endpoint.host, endpoint.port),
                ssl_context,
                make_protocol=lambda key: _Connection(self, endpoint, handshake=key),
                handshake_timeout_s=self.authentication_timeout_s,
                keepalive=self.network.keepalive,
                admit=self._admit_handshake,
                release=self._handshake_ended,
            )
            acceptor.start()
            self._acceptors.append(acceptor)
            tls_port: int = acceptor.sock.getsockname()[1]
            return tls_port
        server = await loop.create_server(
            lambda: _Connection(self, endpoint), endpoint.host or None, endpoint.port
        )
        self._servers.append(server)
        bound: int = server.sockets[0].getsockname()[1]
        return bound

    async def _close_idle(self) -> None:
        limit_s = self.network.connections_max_idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(
                min(limit_s / IDLE_CHECKS_PER_LIMIT, 30.0, self.authentication_timeout_s / 2)
            )
            now = loop.time()
            for connection in list(self._connections):
                if connection.idle_since(now) > limit_s:
                    log.info("closing connection from %s: idle for %.0fs", connection.host, limit_s)
                    connection.close_idle()
                elif (
                    not connection.session.authenticated
                    and now - connection.opened_at > self.authentication_timeout_s
                ):
                    log.info(
                        "closing connection from %s: not authenticated within %.0fs",
                        connection.host,
                        self.authentication_timeout_s,
                    )
                    connection.abort()

    async def close(self) -> None:
        if self._idle_sweeper is not None:
            self._idle_sweeper.cancel()
        for server in self._servers:
            server.close()
        for acceptor in self._acceptors:
            await acceptor.close()
        tasks = [c.task for c in self._connections if c.task is not None]
        for connection in list(self._connections):
            connection.abort()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()

    @property
    def connection_count(self) -> int:
        return len(self._connections) + len(self._handshaking)

    def _full(self, host: str) -> bool:
        if self.connection_count < self._max_connections:
            return False
        log.warning("refusing connection from %s: %d open", host, self.connection_count)
        return True

    def _admit_handshake(self, key: HandshakeKey, host: str) -> bool:
        if self._full(host):
            return False
        self._handshaking.add(key)
        self._on_connection_count(self.connection_count)
        return True

    def _handshake_ended(self, key: HandshakeKey) -> None:
        if key in self._handshaking:  # failed: an established one was moved by _opened
            self._handshaking.discard(key)
            self._on_connection_count(self.connection_count)

    def _opened(self, connection: _Connection) -> bool:
        admitted = connection.handshake
        if admitted is not None and admitted in self._handshaking:
            self._handshaking.discard(admitted)  # counted since it was accepted
        elif self._full(connection.host):
            return False
        self._connections.add(connection)
        self._on_connection_count(self.connection_count)
        return True

    def _closed(self, connection: _Connection) -> None:
        if connection in self._connections:
            self._connections.discard(connection)
            self._on_connection_count(self.connection_count)


class _Connection(asyncio.Protocol):
    """One client connection: frames in, a task handling them in order, coalesced writes out."""

    def __init__(
        self, server: KafkaServer, endpoint: Endpoint, handshake: HandshakeKey | None = None
    ) -> None:
        self._server = server
        self._endpoint = endpoint
        # The key a TLS connection was admitted (and counted) under when it was accepted.
        self.handshake = handshake
        self.session = ConnectionSession(host="unknown")
        self._decoder = FrameDecoder(server._max_frame_bytes)
        self._frames: collections.deque[memoryview] = collections.deque()
        self._transport: asyncio.Transport | None = None
        self._wakeup: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None
        self._pending: list[Piece] = []
        self._pending_bytes = 0
        self._pending_regions = 0
        self._sender: DirectSender | None = None
        self._close_when_sent = False
        self._flush_scheduled = False
        self._reading_paused = False
        self._closed = False
        self.task: asyncio.Task[None] | None = None
        self.host = "unknown"
        # Loop time of the last request received or response sent.
        self.last_active = 0.0
        self.opened_at = 0.0
        self._handling = False
        # Loop time until which the connection is not read: its client is over a quota.
        self._muted_until = 0.0

    # -- transport callbacks ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio's, but have the same methods.
        self._transport = cast(asyncio.Transport, transport)
        self._sender = DirectSender(
            self._transport,
            socket_fd(transport),
            on_stall=self.pause_writing,
            on_drain=self._sent,
            on_error=self._send_failed,
        )
        peer = transport.get_extra_info("peername")
        self.host = str(peer[0]) if peer else "unknown"
        self.session = _session(self.host, self._endpoint, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            configure_keepalive(sock, self._server.network.keepalive)
        self.last_active = self.opened_at = asyncio.get_running_loop().time()
        if not self._server._opened(self):
            self._closed = True
            transport.close()
            return
        self.task = asyncio.get_running_loop().create_task(self._serve())

    def data_received(self, data: bytes) -> None:
        if self._closed:
            return
        self.last_active = asyncio.get_running_loop().time()
        try:
            self._decoder.feed(data)
            while (frame := self._decoder.next_frame()) is not None:
                self._frames.append(frame)
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", self.host, exc)
            self._server._on_protocol_error()
            self.abort()
            return
        if len(self._frames) >= MAX_QUEUED_REQUESTS and self._transport is not None:
            self._transport.pause_reading()
            self._reading_paused = True
        self._wake()

    def eof_received(self) -> bool:
        self._closed = True
        self._wake()
        # While the direct sender holds bytes the transport stays open (closing itself, it would
        # not wait for them); the connection's task closes it once they are out.
        return self._sender is not None and self._sender.busy

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._sender is not None:
            self._sender.close()
        self._server._closed(self)
        self._wake()
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def pause_writing(self) -> None:
        if self._writable is None or self._writable.done():
            self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)

    def _sent(self) -> None:
        # Everything the direct sender held is out: handling may go on, or the socket close.
        self.resume_writing()
        if self._close_when_sent and self._transport is not None:
            self._transport.close()

    def _send_failed(self, exc: Exception) -> None:
        # Part of a frame may be out already: the stream can only end here.
        log.info("closing connection from %s: %s", self.host, exc)
        self.abort()

    def idle_since(self, now: float) -> float:
        """Seconds without traffic; a request in hand or queued is not idleness (a parked
        JoinGroup, a long-poll fetch)."""
        if self._handling or self._frames or self._pending:
            return 0.0
        return now - self.last_active

    def close_idle(self) -> None:
        self._closed = True
        if self._transport is not None:
            self._transport.close()
        self._wake()

    def abort(self) -> None:
        self._closed = True
        if self._transport is not None:
            self._transport.abort()
        self._wake()

    # -- the connection's task -------------------------------------------------------------------

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        handle = self._server._handle_frame
        try:
            while not self._closed:
                if self._muted_until > loop.time():
                    await self._sit_out_throttle(loop)
                    continue
                if not self._frames:
                    self._wakeup = loop.create_future()
                    await self._wakeup
                    continue
                if self._writable is not None and not self._writable.done():
                    await self._writable  # the client is not reading its responses
                    continue  # it may have left meanwhile: then nothing more is handled
                frame = self._frames.popleft()
                if self._reading_paused and len(self._frames) < MAX_QUEUED_REQUESTS // 2:
                    self._reading_paused = False
                    assert self._transport is not None
                    self._transport.resume_reading()
                self._handling = True  # (an exception ends the connection: no reset needed)
                response = await handle(frame, self.session)
                self._handling = False
                if isinstance(response, Throttled):
                    self._muted_until = loop.time() + response.mute_ms / 1000
                    response = response.response
                if response is not None and not self._closed:
                    self._send(loop, response)
                elif isinstance(response, list):
                    close_regions(response)  # the client left: nothing will send them
                if self.session.close_after_response:
                    log.info("closing connection from %s after refusing it", self.host)
                    self._flush()
                    await asyncio.sleep(self._server.failed_authentication_delay_s)
                    break
        except ProtocolError as exc:
            log.info("closing connection from %s: %s", self.host, exc)
        except asyncio.CancelledError:
            pass  # the server is closing; ending this connection is all there is to do
        finally:
            self._flush()
            self._closed = True
            self._server._closed(self)
            if self._sender is not None and self._sender.busy:
                self._close_when_sent = True  # the transport would not wait for those bytes
            elif self._transport is not None:
                self._transport.close()

    async def _sit_out_throttle(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send what is pending (the throttled response leaves at once), then read nothing
        until the throttle ends (as Kafka, a muted connection's close is seen only then; the
        server's own close ends the wait); file regions go out by ``sendfile`` as usual."""
        self._flush()
        if self._closed or self._transport is None:
            return
        self._transport.pause_reading()
        self._handling = True  # a muted connection is not idle
        try:
            while not self._closed and (remaining := self._muted_until - loop.time()) > 0:
                self._wakeup = loop.create_future()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await self._wakeup
        finally:
            self._handling = False
        if not self._reading_paused and not self._closed:
            self._transport.resume_reading()

    def _send(self, loop: asyncio.AbstractEventLoop, response: EncodedResponse) -> None:
        # Joined with the answers to requests still queued here (pipelined), then written as
        # one: once none is left to answer now, or at the loop's next turn.
        if isinstance(response, list):
            self._pending += response
            self._pending_bytes += sum(len(piece) for piece in response)
            self._pending_regions += sum(isinstance(piece, FileRegion) for piece in response)
        else:
            self._pending.append(response)
            self._pending_bytes += len(response)
        if self._pending_bytes >= MAX_PENDING_RESPONSE_BYTES or not self._frames:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        pending, self._pending = self._pending, []
        self._pending_bytes = 0
        regions, self._pending_regions = self._pending_regions, 0
        if not pending or self._transport is None or self._transport.is_closing():
            close_regions(pending)
            return
        self.last_active = asyncio.get_running_loop().time()
        sender = self._sender
        # The sender also takes whatever a TLS transport gets: it writes that in few records.
        if sender is not None and (regions or sender.busy or sender.encrypts):
            sender.send(pending)
        else:
            buffers = cast(list[Buffer], pending)
            if len(buffers) == 1:
                self._transport.write(buffers[0])
            else:
                self._transport.writelines(buffers)


def _session(host: str, endpoint: Endpoint, transport: asyncio.BaseTransport) -> ConnectionSession:
    """A new connection's security: on TLS without SASL its principal is its verified client
    certificate's subject (User:ANONYMOUS without one); SASL listeners start unauthenticated."""
    protocol = endpoint.protocol
    session = ConnectionSession(host=host, listener=endpoint.listener, protocol=protocol)
    if protocol.uses_sasl:
        session.sasl_state = SaslState.HANDSHAKE
    elif protocol.uses_tls:
        session.principal = principal_of(transport.get_extra_info("peercert"))
    return session
