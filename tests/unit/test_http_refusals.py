"""Requests the HTTP parser refuses get the services' JSON error body, on real sockets: a URL
over httptools' limit is 414, a malformed request 400, and a URL at the limit is served."""

from __future__ import annotations

import asyncio
import json

from pafka.http_refusals import MAX_URL_BYTES
from pafka.httpserver import start_http
from pafka.local.ports import free_port
from tests.unit.test_httpserver import hello

Answer = tuple[int, dict[str, str], bytes]


def exchange(request: bytes) -> Answer:
    """Send ``request`` to a fresh server; its status, headers and body, read to the close."""

    async def run() -> bytes:
        port = free_port()
        server, task = await start_http(hello, "127.0.0.1", port)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            received = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return received
        finally:
            server.should_exit = True
            await task

    head, _, body = asyncio.run(run()).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


def get(target: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n".encode()


def refused(answer: Answer, status: int) -> str:
    code, headers, body = answer
    assert code == status
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    error = json.loads(body)
    assert error["error_code"] == status * 100
    return str(error["message"])


def test_a_url_over_the_limit_is_414_with_an_error_body() -> None:
    target = "/v3/sizes?" + "&".join(f"topic_name=t{i:05}" for i in range(6000))
    assert len(target) > MAX_URL_BYTES
    assert str(MAX_URL_BYTES) in refused(exchange(get(target)), 414)


def test_a_url_at_the_limit_is_served() -> None:
    target = "/q?" + "a" * (MAX_URL_BYTES - 3)
    status, _, body = exchange(get(target))
    assert status == 200 and b"hello" in body  # chunked: hello sends no length


def test_a_malformed_request_is_400_with_an_error_body() -> None:
    assert "malformed" in refused(exchange(b"GET /a b c\r\n\r\n"), 400)
    assert refused(exchange(b"GET /x?a=\x01 HTTP/1.1\r\nHost: h\r\n\r\n"), 400)


def test_the_connection_is_closed_after_a_refusal() -> None:
    # A second request pipelined behind the refused one gets no answer: the stream after a
    # refusal cannot be trusted, so the server closes it.
    pipelined = get("/q?" + "a" * (MAX_URL_BYTES + 1)) + get("/next")
    status, _, body = exchange(pipelined)
    assert status == 414 and b"hello" not in body
