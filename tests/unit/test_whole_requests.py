"""Requests served whole (:mod:`pafka.whole_requests`), on real sockets against the embedded
server: the same answers as uvicorn's own way, in order on a pipelined connection, closed when
the client or the server asks, uvicorn's way for every request that is not plainly whole, and a
failing app answered as uvicorn answers it."""

from __future__ import annotations

import asyncio
import gc
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from pafka import whole_requests
from pafka.httpserver import start_http
from pafka.local.ports import free_port

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


async def echo(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """Answers the body it was sent, upper-cased, with the path in a header."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    if scope["path"] == "/fail":
        raise RuntimeError("the app failed")
    if scope["path"] == "/silent":
        return
    if scope["path"].startswith("/injected"):  # a header value that would split the answer
        headers = [(b"x-echo", b"a\r\nset-cookie: b"), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    answer = body.upper()
    headers = [(b"content-type", b"text/plain"), (b"x-path", scope["path"].encode())]
    headers.append((b"content-length", str(len(answer)).encode()))
    if scope["path"].startswith("/whole-at-once"):
        # Answered in one call, as an app with its whole answer at hand may when served whole.
        await scope["extensions"][whole_requests.WHOLE_ANSWER]["answer"](201, headers, answer)
        return
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": answer[:2], "more_body": True})
    await send({"type": "http.response.body", "body": answer[2:]})


WHOLE_PATHS = ("/fail", "/silent", "/injected")


class Served:
    def __init__(self) -> None:
        self.whole: list[str] = []  # paths served whole, in order
        self.other_scopes: list[dict[str, Any]] = []  # the scopes of requests not served whole

    def route(self, scope: dict[str, Any]) -> Any:
        if scope["path"].startswith("/whole") or scope["path"] in WHOLE_PATHS:
            self.whole.append(scope["path"])
            return echo
        self.other_scopes.append(scope)
        return None


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[int, Served]]:
    served = Served()
    port = free_port()
    server, task = await start_http(echo, "127.0.0.1", port, whole_route=served.route)
    try:
        yield port, served
    finally:
        server.should_exit = True
        await task


def post(path: str, body: bytes, *extra: str, version: str = "1.1") -> bytes:
    head = [f"POST {path} HTTP/{version}", "Host: test", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def without_date(answer: bytes) -> bytes:
    return re.sub(rb"date: [^\r]*\r\n", b"", answer)


def answers(stream: bytes) -> list[tuple[bytes, bytes]]:
    """Each whole answer in ``stream`` as (head, body), interim 100 Continue answers left out."""
    found = []
    while b"\r\n\r\n" in stream:
        head, rest = stream.split(b"\r\n\r\n", 1)
        if head.startswith(b"HTTP/1.1 100 "):
            stream = rest
            continue
        length = int(re.search(rb"content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        if len(rest) < length:
            break  # not all here yet
        found.append((head, rest[:length]))
        stream = rest[length:]
    return found


async def exchange(port: int, data: bytes) -> list[tuple[bytes, bytes]]:
    """The answers to ``data`` until the server closes the connection or has answered each
    request it holds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    wanted = data.count(b" HTTP/1.")
    stream = b""
    try:
        while len(answers(stream)) < wanted:
            chunk = await asyncio.wait_for(reader.read(65536), 5)
            if not chunk:
                break
            stream += chunk
        return answers(stream)
    finally:
        writer.close()


async def closed_after(port: int, data: bytes) -> bytes:
    """Everything the server writes until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


def test_an_answer_served_whole_is_the_answer_uvicorn_gives() -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            [(head, body)] = await exchange(port, post("/whole", b"hello"))
            [(other_head, other_body)] = await exchange(port, post("/other", b"hello"))
            assert served.whole == ["/whole"]
            assert head.startswith(b"HTTP/1.1 201 Created\r\n") and body == b"HELLO"
            assert b"x-path: /whole\r\n" in head and b"server: uvicorn\r\n" in head
            assert without_date(head).replace(b"/whole", b"/other") == without_date(other_head)
            assert other_body == body

    asyncio.run(scenario())


def test_an_answer_given_in_one_call_is_the_answer_given_as_messages() -> None:
    def same_but_path(head: bytes) -> bytes:
        return re.sub(rb"x-path: [^\r]*\r\n", b"", without_date(head))

    async def scenario() -> None:
        async with serving() as (port, served):
            [(at_once, body)] = await exchange(port, post("/whole-at-once", b"hello"))
            [(as_messages, other_body)] = await exchange(port, post("/whole", b"hello"))
            [(uvicorns, uvicorns_body)] = await exchange(port, post("/other", b"hello"))
            assert served.whole == ["/whole-at-once", "/whole"]
            assert body == other_body == uvicorns_body == b"HELLO"
            assert b"x-path: /whole-at-once\r\n" in at_once
            assert same_but_path(at_once) == same_but_path(as_messages) == same_but_path(uvicorns)
            # A request not served whole has no such extension to answer through.
            [other] = served.other_scopes
            assert whole_requests.WHOLE_ANSWER not in other.get("extensions", {})

    asyncio.run(scenario())


def test_a_request_served_whole_is_freed_when_answered_not_left_to_the_collector() -> None:
    """Each request's objects go when it is answered: none is left in a reference cycle for
    the garbage collector to find (which, per request, cost a busy gateway a tenth of its CPU)."""

    async def scenario() -> list[Any]:
        async with serving() as (port, served):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                # One after another on one connection, answered in one call or as messages.
                for path in ("/whole-at-once-1", "/whole", "/whole-at-once-2", "/whole"):
                    writer.write(post(path, b"ab"))
                    stream = b""
                    while not answers(stream):
                        chunk = await asyncio.wait_for(reader.read(65536), 5)
                        assert chunk, stream
                        stream += chunk
                assert len(served.whole) == 4
                # The connection is still open: only what the requests left unreachable is
                # garbage now.
                gc.set_debug(gc.DEBUG_SAVEALL)
                try:
                    gc.collect()
                    left = [
                        found
                        for found in gc.garbage
                        if isinstance(found, whole_requests.WholeCycle)
                        or (isinstance(found, dict) and whole_requests.WHOLE_ANSWER in found)
                    ]
                finally:
                    gc.set_debug(0)
                    gc.garbage.clear()
                return left
            finally:
                writer.close()

    gc.collect()
    gc.disable()
    try:
        assert asyncio.run(scenario()) == []
    finally:
        gc.enable()


def test_pipelined_requests_are_answered_in_order() -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            requests = [
                post("/whole-1", b"aa"),
                post("/other", b"bb"),
                post("/whole-2", b"cc"),
                post("/whole-3", b"dd", "Connection: close"),
            ]
            stream = await closed_after(port, b"".join(requests))
            found = [(re.search(rb"x-path: (\S*)", h).group(1), b) for h, b in answers(stream)]  # type: ignore[union-attr]
            assert found == [
                (b"/whole-1", b"AA"),
                (b"/other", b"BB"),
                (b"/whole-2", b"CC"),
                (b"/whole-3", b"DD"),
            ]
            assert stream.endswith(b"connection: close\r\n\r\nDD")
            # The first is served whole; the others arrived while one was being answered.
            assert served.whole[0] == "/whole-1"

    asyncio.run(scenario())


def test_close_and_http_1_0_end_the_connection_after_the_answer() -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            closed = await closed_after(port, post("/whole", b"x", "Connection: close"))
            old = await closed_after(port, post("/whole", b"y", version="1.0"))
            assert closed.endswith(b"connection: close\r\n\r\nX")
            assert old.endswith(b"connection: close\r\n\r\nY")
            assert served.whole == ["/whole", "/whole"]

    asyncio.run(scenario())


CHUNKED = b"POST /whole HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    ("request_bytes", "body"),
    [
        (CHUNKED + b"2\r\nhi\r\n0\r\n\r\n", b"HI"),
        (post("/whole", b"hi", "Expect: 100-continue"), b"HI"),
        (post("/whole", b"hi", "X-Forwarded-For: 10.0.0.1"), b"HI"),
        (post("/whole", b"h" * (whole_requests.MAX_BODY_BYTES + 1)), b"H" * (1 << 20 | 1)),
        (b"PUT /whole HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi", b"HI"),
    ],
    ids=["chunked", "expect-continue", "forwarded", "over-the-limit", "not-a-post"],
)
def test_requests_not_plainly_whole_go_uvicorns_way(request_bytes: bytes, body: bytes) -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            [(head, answered)] = await exchange(port, request_bytes)
            assert head.startswith(b"HTTP/1.1 201") and b"x-path: /whole" in head
            assert answered == body
            assert served.whole == []

    asyncio.run(scenario())


def test_a_failing_app_is_answered_as_uvicorn_answers_it() -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            for path in ("/fail", "/silent"):
                answer = await closed_after(port, post(path, b"x"))
                assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
                assert answer.endswith(b"connection: close\r\n\r\nInternal Server Error")
            # A header uvicorn refuses to write: the connection closed, nothing written, as
            # uvicorn's way does it.
            assert await closed_after(port, post("/injected", b"x")) == b""
            assert await closed_after(port, post("/injected-uvicorns-way", b"x")) == b""
            assert served.whole == ["/fail", "/silent", "/injected"]
            # The server goes on serving.
            [(_, body)] = await exchange(port, post("/whole", b"ok"))
            assert body == b"OK"

    asyncio.run(scenario())


def test_a_client_leaving_before_its_answer_leaves_the_server_serving() -> None:
    async def scenario() -> None:
        async with serving() as (port, served):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(post("/whole", b"abc")[:-1])  # the body one byte short
            await writer.drain()
            async with asyncio.timeout(5):
                while not served.whole:  # its head read: it waits for the rest of the body
                    await asyncio.sleep(0.01)
            writer.close()
            assert served.whole == ["/whole"]
            [(_, body)] = await exchange(port, post("/whole", b"ok"))
            assert body == b"OK"

    asyncio.run(scenario())


def test_a_shutdown_lets_a_whole_request_finish_and_closes_its_connection() -> None:
    async def scenario() -> None:
        started, release = asyncio.Event(), asyncio.Event()

        async def slow(scope: dict[str, Any], receive: Receive, send: Send) -> None:
            await receive()
            started.set()
            await release.wait()
            headers = [(b"content-length", b"4")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"done"})

        port = free_port()
        server, task = await start_http(slow, "127.0.0.1", port, whole_route=lambda _: slow)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post("/whole", b"x"))
        await writer.drain()
        await asyncio.wait_for(started.wait(), 5)
        server.should_exit = True
        await asyncio.sleep(0.3)  # shutting down, waiting for the request being served
        assert not task.done()
        release.set()
        answer = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert answer.endswith(b"connection: close\r\n\r\ndone")
        await asyncio.wait_for(task, 5)

    asyncio.run(scenario())


def test_a_receive_waiting_across_the_answer_returns_with_it_as_uvicorns_does() -> None:
    async def scenario() -> None:
        after: list[str] = []

        async def watching(scope: dict[str, Any], receive: Receive, send: Send) -> None:
            await receive()
            leaving = asyncio.ensure_future(receive())  # watching for the client to leave
            await asyncio.sleep(0.05)
            headers = [(b"content-length", b"2")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"ok"})
            after.append((await asyncio.wait_for(leaving, 5))["type"])

        port = free_port()
        server, task = await start_http(watching, "127.0.0.1", port, whole_route=lambda _: watching)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(post("/whole", b"x"))
            assert (await asyncio.wait_for(reader.readuntil(b"ok"), 5)).endswith(b"\r\n\r\nok")
            async with asyncio.timeout(5):  # the client still connected
                while not after:
                    await asyncio.sleep(0.01)
            assert after == ["http.disconnect"]
        finally:
            writer.close()
            server.should_exit = True
            await task

    asyncio.run(scenario())
