"""A TCP proxy for tests that can black-hole its traffic: a network cut without namespaces.

Point one process at :attr:`TcpProxy.address` instead of the real server (ZooKeeper's client
port, say). :meth:`blackhole` keeps every connection open but stops moving bytes in both
directions, as a network that silently drops packets does: the process sees no error, only
silence, and finds out by its own timeouts. Bytes sent meanwhile wait in the socket buffers and
flow again after :meth:`heal`, as TCP retransmits them after a real cut (unless an end gave up
and closed its connection, which then closes the other end too). New connections are accepted
during a cut but carry nothing until it heals.

One thread moves the bytes of every connection (``select`` over the sockets that may flow).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType

POLL_S = 0.05
CHUNK_BYTES = 65536


class TcpProxy:
    def __init__(self, upstream: tuple[str, int], host: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self._listener = socket.create_server((host, 0))
        self._listener.setblocking(False)
        self.host = host
        self.port: int = self._listener.getsockname()[1]
        # Each socket mapped to the one its bytes go to.
        self._peers: dict[socket.socket, socket.socket] = {}
        self._flowing = threading.Event()
        self._flowing.set()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"tcp-proxy-{self.port}", daemon=True
        )

    @property
    def address(self) -> str:
        """``host:port`` to give the process instead of the upstream's address."""
        return f"{self.host}:{self.port}"

    @classmethod
    def to(cls, connect: str) -> TcpProxy:
        """A started proxy to ``host:port``."""
        host, port = connect.rsplit(":", 1)
        return cls((host, int(port))).start()

    def start(self) -> TcpProxy:
        self._thread.start()
        return self

    def blackhole(self) -> None:
        """Stop moving bytes, both ways, on every connection; keep them open."""
        self._flowing.clear()

    def heal(self) -> None:
        self._flowing.set()

    @property
    def cut(self) -> bool:
        return not self._flowing.is_set()

    @property
    def connections(self) -> int:
        return len(self._peers) // 2

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        for sock in [self._listener, *self._peers]:
            with contextlib.suppress(OSError):
                sock.close()
        self._peers.clear()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the thread ------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopped.is_set():
            watched = [self._listener]
            if self._flowing.is_set():
                watched += list(self._peers)
            try:
                readable, _, _ = select.select(watched, [], [], POLL_S)
            except (OSError, ValueError):
                continue  # a socket closed under select; the next turn lists the live ones
            for sock in readable:
                if sock is self._listener:
                    self._accept()
                elif self._flowing.is_set() and sock in self._peers:
                    self._forward(sock)

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except (BlockingIOError, OSError):
            return
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        for sock in (client, server):
            sock.setblocking(True)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._peers[client] = server
        self._peers[server] = client

    def _forward(self, sock: socket.socket) -> None:
        peer = self._peers[sock]
        try:
            data = sock.recv(CHUNK_BYTES)
            if data:
                peer.sendall(data)
                return
        except OSError:
            pass
        self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        peer = self._peers.pop(sock, None)
        for s in (sock, peer):
            if s is not None:
                self._peers.pop(s, None)
                with contextlib.suppress(OSError):
                    s.close()
