"""The connector's bulk GETs against a real HTTP server on loopback: large bodies whole, the
status, headers and query as sent, one kept-alive connection, a connection the server closed
while idle replaced without the caller noticing, a slow answer waited for longer than a
connection, and no server as a transport error."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pafka.spark.bulk_http import BulkHttp

BODY = bytes(range(256)) * (8 * 4096 + 3)  # 8 MiB and a bit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    seen: list[tuple[int, str, dict[str, str]]] = []

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        Handler.seen.append((self.client_address[1], url.path, dict(self.headers.items())))
        if url.path == "/slow":
            time.sleep(0.8)
        if url.path == "/missing":
            body, status = b'{"error_code":41601,"message":"out of range"}', 416
        else:
            body, status = BODY[: int(query.get("size", len(BODY)))], 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Pafka-Next-Offset", query.get("offset", "0"))
        self.end_headers()
        self.wfile.write(body)
        if url.path == "/then-close":
            # Closed without saying so, as a server closes a connection idle too long.
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_large_body_arrives_whole_with_its_status_and_headers(server: str) -> None:
    bulk = BulkHttp(timeout_s=10, connect_timeout_s=5, headers={"Authorization": "Bearer t0k"})
    answer = bulk.get(
        f"{server}/records", params={"offset": 42, "size": len(BODY)}, headers={"Accept": "x/y"}
    )
    assert answer.status_code == 200
    assert answer.content == BODY
    assert answer.headers["pafka-next-offset"] == "42"
    _, path, headers = Handler.seen[0]
    assert path == "/records"
    assert headers["Authorization"] == "Bearer t0k"
    assert headers["Accept"] == "x/y"
    bulk.close()


def test_an_error_answer_is_returned_for_the_caller_to_read(server: str) -> None:
    bulk = BulkHttp(timeout_s=10, connect_timeout_s=5, headers={})
    answer = bulk.get(f"{server}/missing", params={"offset": 1}, headers={})
    assert answer.status_code == 416
    assert answer.json()["error_code"] == 41601
    bulk.close()


def test_requests_share_one_connection_and_a_closed_one_is_replaced(server: str) -> None:
    bulk = BulkHttp(timeout_s=10, connect_timeout_s=5, headers={})
    for size in (10, 20):
        assert (
            bulk.get(f"{server}/records", params={"size": size}, headers={}).content == BODY[:size]
        )
    assert len({port for port, _, _ in Handler.seen}) == 1
    bulk.get(f"{server}/then-close", params={"size": 5}, headers={})
    # The server closed the kept connection after answering: the next GET still succeeds.
    assert bulk.get(f"{server}/records", params={"size": 7}, headers={}).content == BODY[:7]
    assert len({port for port, _, _ in Handler.seen}) == 2
    bulk.close()


def test_the_connect_timeout_does_not_cut_a_slow_answer(server: str) -> None:
    bulk = BulkHttp(timeout_s=5, connect_timeout_s=0.3, headers={})
    assert bulk.get(f"{server}/slow", params={"size": 3}, headers={}).content == BODY[:3]
    bulk.close()


def test_no_server_is_a_transport_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bulk = BulkHttp(timeout_s=5, connect_timeout_s=5, headers={})
    with pytest.raises(httpx.TransportError, match="ConnectionRefused"):
        bulk.get(f"http://127.0.0.1:{port}/records", params={}, headers={})
