"""Answers written through the coalescing transport arrive whole and in order, on real
sockets: small and large bodies, streamed bodies, HEAD, and a connection closed after its
answer."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx

from pafka.coalesced_writes import HOLD_LIMIT_BYTES, CoalescingTransport
from pafka.httpserver import start_http
from pafka.local.ports import free_port

Send = Callable[[dict[str, object]], Awaitable[None]]
LARGE = bytes(range(256)) * (HOLD_LIMIT_BYTES // 64)  # four times what is held
CHUNKS = [b"first,", b"x" * (HOLD_LIMIT_BYTES + 1), b",last"]


async def app(scope: dict[str, object], receive: object, send: Send) -> None:
    path = scope["path"]
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for chunk in CHUNKS:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await asyncio.sleep(0)
        await send({"type": "http.response.body", "body": b""})
        return
    body = LARGE if path == "/large" else b"small"
    headers = [(b"content-length", str(len(body)).encode()), (b"x-path", str(path).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve(scenario: Callable[[int], Awaitable[None]]) -> None:
    async def run() -> None:
        port = free_port()
        server, task = await start_http(app, "127.0.0.1", port)
        try:
            await scenario(port)
        finally:
            server.should_exit = True
            await task

    asyncio.run(run())


def test_answers_on_one_connection_arrive_whole_and_in_order() -> None:
    async def scenario(port: int) -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            for path in ["/a", "/large", "/b", "/stream", "/c", "/large"]:
                answer = await client.get(path)
                expected = {"/large": LARGE, "/stream": b"".join(CHUNKS)}.get(path, b"small")
                assert (answer.status_code, answer.content) == (200, expected)
                if path != "/stream":
                    assert answer.headers["x-path"] == path
            head = await client.head("/a")
            assert (head.status_code, head.headers["content-length"], head.content) == (
                200,
                "5",
                b"",
            )
            assert (await client.get("/d")).headers["x-path"] == "/d"

    serve(scenario)


def test_an_answer_before_close_arrives_whole() -> None:
    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        received = await asyncio.wait_for(reader.read(), 10)  # to the end: the server closes
        writer.close()
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"small"

    serve(scenario)


def test_pipelined_requests_are_answered_in_order() -> None:
    async def scenario(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(b"GET /%d HTTP/1.1\r\nHost: h\r\n\r\n" % i for i in range(5)))
        for i in range(5):
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            assert b"x-path: /%d" % i in head
            assert await reader.readexactly(5) == b"small"
        writer.close()

    serve(scenario)


class _Recorder:
    """The transport's side: what was written, write by write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return False


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


def test_a_head_waits_for_its_body_within_the_turn_and_a_lone_chunk_does_not_wait() -> None:
    async def main() -> list[list[bytes]]:
        seen = []
        recorder = _Recorder()
        transport = CoalescingTransport(recorder)  # type: ignore[arg-type]
        transport.write(HEAD)
        seen.append(list(recorder.writes))  # held
        transport.write(b"ok")
        seen.append(list(recorder.writes))  # joined with its head, written
        transport.write(b"5\r\nchunk\r\n")  # a streamed body's chunk: no head to wait for
        seen.append(list(recorder.writes))
        transport.write(HEAD)
        await asyncio.sleep(0)  # the end of the turn
        seen.append(list(recorder.writes))
        return seen

    held, joined, chunk, turn_end = asyncio.run(main())
    assert held == []
    assert joined == [HEAD + b"ok"]
    assert chunk == [HEAD + b"ok", b"5\r\nchunk\r\n"]
    assert turn_end == [HEAD + b"ok", b"5\r\nchunk\r\n", HEAD]
