"""Accepting a TLS listener's connections ourselves, so that each counts from the moment it is
accepted, as Kafka counts them.

The event loop's own TLS server tells the application about a connection only once its
handshake is done: until then a connection is neither under ``max.connections`` nor in the
connection count, and clients that start handshakes and never finish them could hold every
descriptor the broker has for the whole handshake deadline. Here each accepted socket is
admitted (or closed at once when the broker is full) before its handshake starts, and is
released when the handshake fails or the connection, once established, is counted as such.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable

from pafka.net.deadlines import KeepAlive
from pafka.net.sockets import configure_keepalive

log = logging.getLogger(__name__)

# Kafka's listen backlog is the JVM's default, 50; the loop's servers use 100.
LISTEN_BACKLOG = 100
# Accepts per readiness callback: a burst of connections cannot starve the loop's other work.
ACCEPTS_PER_TURN = 32

HandshakeKey = int
# The protocol factory for an accepted connection, given the key it was admitted under.
ProtocolFactory = Callable[[HandshakeKey], asyncio.BaseProtocol]


def listening_socket(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening on ``host`` (all interfaces when empty) and ``port``."""
    if host:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
    elif socket.has_dualstack_ipv6():
        sock = socket.create_server(
            ("::", port), family=socket.AF_INET6, backlog=LISTEN_BACKLOG, dualstack_ipv6=True
        )
    else:
        sock = socket.create_server(("0.0.0.0", port), backlog=LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


class TlsAcceptor:
    """Accepts on ``sock`` and runs each admitted connection's TLS handshake under a deadline.

    ``admit(key)`` says whether a new connection may open (and counts it); ``release(key)`` is
    called once its handshake has ended, whether or not the connection was established.
    """

    def __init__(
        self,
        sock: socket.socket,
        ssl_context: ssl.SSLContext,
        *,
        make_protocol: ProtocolFactory,
        handshake_timeout_s: float,
        keepalive: KeepAlive,
        admit: Callable[[HandshakeKey, str], bool],
        release: Callable[[HandshakeKey], None],
    ) -> None:
        self.sock = sock
        self._ssl = ssl_context
        self._make_protocol = make_protocol
        self._handshake_timeout_s = handshake_timeout_s
        self._keepalive = keepalive
        self._admit, self._release = admit, release
        self._handshakes: set[asyncio.Task[None]] = set()
        self._next_key = 0
        self._closed = False

    def start(self) -> None:
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._accept_ready)

    def _accept_ready(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            try:
                conn, peer = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors, say: the next readiness tries again
                log.warning("accepting a TLS connection failed: %s", exc)
                return
            self._next_key += 1
            key = self._next_key
            host = str(peer[0]) if peer else "unknown"
            if not self._admit(key, host):
                conn.close()
                continue
            conn.setblocking(False)
            configure_keepalive(conn, self._keepalive)
            task = asyncio.get_running_loop().create_task(self._handshake(conn, key, host))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, conn: socket.socket, key: HandshakeKey, host: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: self._make_protocol(key),
                conn,
                ssl=self._ssl,
                ssl_handshake_timeout=self._handshake_timeout_s,
            )
        except OSError as exc:  # TLS errors, the handshake deadline, resets
            # The transport has closed the socket; Kafka logs a failed handshake at INFO.
            log.info("TLS handshake with %s failed: %s", host, exc)
        finally:
            self._release(key)
            if conn.fileno() >= 0:  # the loop refused the socket before taking it over
                conn.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        asyncio.get_running_loop().remove_reader(self.sock.fileno())
        self.sock.close()
        for task in list(self._handshakes):
            task.cancel()
        await asyncio.gather(*self._handshakes, return_exceptions=True)
