"""The test proxy on real sockets: bytes flow, stop in both directions when cut, flow again."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.integration.tcp_proxy import TcpProxy


@pytest.fixture
def echo_server() -> Iterator[tuple[str, int]]:
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        # A cut may reset the proxy's connection to here: for this server, the end of it.
        with conn, contextlib.suppress(ConnectionResetError):
            while data := conn.recv(4096):
                conn.sendall(data)

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = server.accept()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[:2]
    stop.set()
    thread.join()
    server.close()


def test_bytes_stop_while_cut_and_flow_after_heal(echo_server: tuple[str, int]) -> None:
    with (
        TcpProxy(echo_server).start() as proxy,
        socket.create_connection((proxy.host, proxy.port), timeout=5) as sock,
    ):
        sock.sendall(b"before")
        assert sock.recv(100) == b"before"
        proxy.blackhole()
        sock.sendall(b"during")
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            sock.recv(100)
        # A new connection is accepted but carries nothing either.
        with socket.create_connection((proxy.host, proxy.port), timeout=5) as other:
            other.sendall(b"new")
            other.settimeout(0.5)
            with pytest.raises(TimeoutError):
                other.recv(100)
        proxy.heal()
        sock.settimeout(5)
        # What was sent during the cut arrives after it, as TCP retransmits it.
        assert sock.recv(100) == b"during"


def test_a_closed_end_closes_the_other(echo_server: tuple[str, int]) -> None:
    with TcpProxy(echo_server).start() as proxy:
        sock = socket.create_connection((proxy.host, proxy.port), timeout=5)
        sock.sendall(b"x")
        assert sock.recv(10) == b"x"
        sock.close()
        for _ in range(100):
            if proxy.connections == 0:
                break
            threading.Event().wait(0.05)
        assert proxy.connections == 0
