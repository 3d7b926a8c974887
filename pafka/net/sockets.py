"""TCP connections that cannot hang: a connect deadline, keepalive and TCP_USER_TIMEOUT on
long-lived sockets, and the reconnect backoff as a pure value.

Why each piece: a SYN to a host behind a silent partition is retransmitted by the kernel at 1,
3, 7, 15 ... s, so a connect without a deadline waits minutes, and one with a long deadline
notices a healed path only at its next retransmission. ``open_connection`` can therefore probe:
a fresh SYN every ``probe_interval_s`` until the whole setup deadline is spent. On an
established connection, data the peer never acknowledges would be retransmitted for ~15 minutes
(``tcp_retries2``); TCP_USER_TIMEOUT ends it after the caller's own deadline instead, and
keepalive probes find a vanished peer on an idle connection.
"""

from __future__ import annotations

import asyncio
import math
import socket
import ssl
from dataclasses import dataclass
from typing import Protocol

from pafka.net.deadlines import KeepAlive

# Linux's initial SYN retransmission timeout: probing more often than this would only add
# SYNs to a path that is merely slow.
SYN_PROBE_INTERVAL_S = 1.0
# Kafka's reconnect jitter (CommonClientConfigs.RECONNECT_BACKOFF_JITTER).
BACKOFF_JITTER = 0.2


class _SocketOptions(Protocol):
    def setsockopt(self, level: int, option: int, value: int, /) -> None: ...


def configure_keepalive(
    sock: _SocketOptions, keepalive: KeepAlive, user_timeout_ms: int | None = None
) -> None:
    """Turn on keepalive (idle/interval in whole seconds, at least 1) and, where the platform
    has it, TCP_USER_TIMEOUT: unacknowledged data (or unanswered keepalives) for that long ends
    the connection with ETIMEDOUT."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, _seconds(keepalive.idle_ms))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, _seconds(keepalive.interval_ms))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, keepalive.count)
    if user_timeout_ms is not None and hasattr(socket, "TCP_USER_TIMEOUT"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, max(user_timeout_ms, 1))


def _seconds(ms: int) -> int:
    return max(math.ceil(ms / 1000), 1)


async def open_connection(
    host: str,
    port: int,
    *,
    setup_timeout_s: float,
    probe_interval_s: float | None = None,
    keepalive: KeepAlive | None = None,
    user_timeout_ms: int | None = None,
    limit: int = 2**16,
    ssl_context: ssl.SSLContext | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Connect within ``setup_timeout_s`` or raise :class:`TimeoutError` (an ``OSError``).

    With ``ssl_context`` the TLS handshake is part of each attempt, inside the same deadline.

    With ``probe_interval_s``, each attempt lasts at most that long and a new one starts at
    once, so a path that heals is found within one interval rather than at the kernel's next
    SYN retransmission. A refused connection is raised at once: the peer is reachable, the
    caller's backoff decides when to try again.
    """
    if setup_timeout_s <= 0:
        raise ValueError(f"setup_timeout_s must be positive, got {setup_timeout_s}")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + setup_timeout_s
    attempts = 0
    while True:
        remaining_s = deadline - loop.time()
        if remaining_s <= 0:
            raise TimeoutError(
                f"cannot connect to {host}:{port} within {setup_timeout_s:g}s "
                f"({attempts} attempt{'s' if attempts != 1 else ''})"
            )
        attempt_s = remaining_s if probe_interval_s is None else min(probe_interval_s, remaining_s)
        attempts += 1
        try:
            async with asyncio.timeout(attempt_s):
                reader, writer = await asyncio.open_connection(
                    host, port, limit=limit, ssl=ssl_context
                )
        except TimeoutError:
            continue
        sock = writer.get_extra_info("socket")
        if keepalive is not None and sock is not None:
            configure_keepalive(sock, keepalive, user_timeout_ms)
        return reader, writer


@dataclass(frozen=True)
class Backoff:
    """Kafka's exponential reconnect backoff (``reconnect.backoff.ms`` doubling up to
    ``reconnect.backoff.max.ms``, +/-20% jitter) as a value: ``failed()`` after each failed
    attempt, ``succeeded()`` after a success, ``delay_ms(draw)`` for the next pause."""

    base_ms: int
    max_ms: int
    failures: int = 0

    def failed(self) -> Backoff:
        return Backoff(self.base_ms, self.max_ms, self.failures + 1)

    def succeeded(self) -> Backoff:
        return Backoff(self.base_ms, self.max_ms, 0)

    def delay_ms(self, draw: float) -> float:
        """The pause before the next attempt; ``draw`` is uniform in [0, 1) (``random()``)."""
        return backoff_ms(self.failures, self.base_ms, self.max_ms, draw)


def backoff_ms(failures: int, base_ms: int, max_ms: int, draw: float) -> float:
    """``base_ms * 2**(failures - 1)`` (no pause before a first attempt), capped at
    ``max_ms``, jittered by +/-20% and never above ``max_ms``."""
    if failures <= 0 or max_ms <= 0:
        return 0.0
    # Doubling stops once it passes the cap, so huge failure counts cannot overflow.
    exponent = min(failures - 1, max(math.ceil(math.log2(max_ms / max(base_ms, 1))), 0))
    term = min(base_ms * 2.0**exponent, float(max_ms))
    jittered = term * (1 - BACKOFF_JITTER + 2 * BACKOFF_JITTER * draw)
    return min(jittered, float(max_ms))
