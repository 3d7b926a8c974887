"""An app's busiest requests served whole: the body read before the app runs, the answer
written in one piece.

For every request uvicorn builds a request-response cycle (an ``asyncio.Event``, flow
control, per-message checks), runs the app under its proxy-headers middleware, and writes the
answer's head and body as they are sent. For a small POST whose answer is one small body (a
REST produce) that machinery costs about as much as the app's own work. A service names such
requests with a *whole route* (``scope -> ASGI app or None``); for those,
:class:`WholeRequestsProtocol`:

* waits for the whole body (a ``Content-Length`` one, at most :data:`MAX_BODY_BYTES`), then
  runs the app once, its first ``receive`` answering the body whole;
* keeps the answer until its last body message and writes status line, the server's default
  headers, the app's headers and the body in one write. An app that has its whole answer at
  hand may give it in one call instead of two messages: the scope's ``extensions`` hold
  :data:`WHOLE_ANSWER`, ``{"answer": answer}``, and ``await answer(status, headers, body)``.

Everything else about the connection stays uvicorn's own, as the same objects carry it:
keep-alive and its idle timeout, ``Connection: close`` and HTTP/1.0, pipelined requests (taken
in order: one arriving while a whole request is served waits for it), graceful shutdown, a
client leaving. A request the route does not name, or that is not plainly a small body
(chunked, ``Expect: 100-continue``, forwarded headers for the proxy-headers middleware to
read, an upgrade), goes uvicorn's way. An app that fails is answered as uvicorn answers it.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Callable
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import (
    HEADER_RE,
    HEADER_VALUE_RE,
    STATUS_LINE,
    HttpToolsProtocol,
)

WholeRoute = Callable[[dict[str, Any]], Any]  # the scope -> the ASGI app serving it, or None
# The scope extension of a request served whole: its answer given in one call.
WHOLE_ANSWER = "pafka.whole_answer"
# Bodies up to this are read whole before the app runs (larger ones stream, uvicorn's way).
MAX_BODY_BYTES = 1 << 20
# Headers that make a request go uvicorn's way: its middleware or its cycle reads them.
_UVICORN_HEADERS = frozenset(
    {b"transfer-encoding", b"expect", b"x-forwarded-for", b"x-forwarded-proto", b"upgrade"}
)
_FAILED = (
    b"content-type: text/plain; charset=utf-8\r\ncontent-length: 21\r\n"
    b"connection: close\r\n\r\nInternal Server Error"
)

log = logging.getLogger("uvicorn.error")


class _Waiting:
    """What uvicorn's protocol calls ``message_event``: set when the client leaves."""

    __slots__ = ("_future",)

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def set(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    async def wait(self) -> None:
        self._future = asyncio.get_running_loop().create_future()
        await self._future


class WholeCycle:
    """One whole request and its answer, in the attributes uvicorn's protocol reads of a cycle
    (``response_complete``, ``disconnected``, ``keep_alive``, ``message_event``).

    It holds no reference to its scope, whose extensions hold its :meth:`answer_whole`: that
    would make each request a reference cycle, left for the garbage collector to find (at a
    gateway's 10,000 requests a second, a tenth of its CPU) instead of freed when it ends."""

    def __init__(self, protocol: WholeRequestsProtocol, keep_alive: bool):
        self.protocol = protocol
        self.keep_alive = keep_alive
        self.parts: list[bytes] = []
        self.message_event = _Waiting()
        self.disconnected = False
        self.response_started = False
        self.response_complete = False
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._answer: list[bytes] = []
        self._received = False

    async def receive(self) -> dict[str, Any]:
        if not self._received and not self.disconnected:
            self._received = True
            return {"type": "http.request", "body": b"".join(self.parts), "more_body": False}
        if not self.disconnected and not self.response_complete:
            await self.message_event.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if self.disconnected:
            return
        kind = message["type"]
        if not self.response_started:
            if kind != "http.response.start":
                raise RuntimeError(f"Expected ASGI message 'http.response.start', got '{kind}'")
            self._start(message["status"], list(message.get("headers", ())))
            return
        if self.response_complete or kind != "http.response.body":
            raise RuntimeError(f"Unexpected ASGI message '{kind}'")
        self._answer.append(message.get("body", b""))
        if not message.get("more_body", False):
            await self.protocol.answer(self, self._status, self._headers, b"".join(self._answer))

    async def answer_whole(
        self, status: int, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """The answer's start and its one body message, in one call (:data:`WHOLE_ANSWER`)."""
        if self.disconnected:
            return
        if self.response_started:
            raise RuntimeError("Unexpected ASGI message 'http.response.start'")
        self._start(status, headers)
        await self.protocol.answer(self, status, self._headers, body)

    def _start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.response_started = True  # a refused header below: the connection closes unanswered
        self._status = status
        self._headers = headers
        for name, value in headers:  # as uvicorn refuses them: nothing is written
            if HEADER_RE.search(name) or HEADER_VALUE_RE.search(value):
                raise RuntimeError("Invalid HTTP header name or value.")

    def head(self, status: int, headers: list[tuple[bytes, bytes]], length: int) -> list[bytes]:
        """The answer's status line and headers (its length unless the app gave it)."""
        default, has_length, has_close = _written_defaults(self.protocol.server_state)
        content = [STATUS_LINE[status], default]
        if has_close:
            self.keep_alive = False
        for name, value in headers:
            lower = name.lower()
            if lower == b"content-length":
                has_length = True
            elif lower == b"connection" and b"close" in value.lower():
                self.keep_alive = False
                has_close = True
            content += [lower, b": ", value, b"\r\n"]
        if not has_length:
            content.append(b"content-length: %d\r\n" % length)
        if not self.keep_alive and not has_close:
            content.append(b"connection: close\r\n")
        content.append(b"\r\n")
        return content


# The server's default headers as written, with whether they name a length or a close: the
# list is replaced when they change (its date, once a second), so it is known by identity.
_defaults_written: tuple[object, tuple[bytes, bool, bool]] = (None, (b"", False, False))


def _written_defaults(server_state: Any) -> tuple[bytes, bool, bool]:
    global _defaults_written
    defaults = server_state.default_headers
    if _defaults_written[0] is not defaults:
        lines, has_length, has_close = [], False, False
        for name, value in defaults:
            lower = name.lower()
            has_length = has_length or lower == b"content-length"
            has_close = has_close or (lower == b"connection" and b"close" in value.lower())
            lines += [lower, b": ", value, b"\r\n"]
        _defaults_written = (defaults, (b"".join(lines), has_length, has_close))
    return _defaults_written[1]


class WholeRequestsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol serving the requests ``whole_route`` names whole (see the
    module's comment); the answer goes out through :meth:`write_answer`."""

    def __init__(self, *args: Any, whole_route: WholeRoute, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.whole_route = whole_route

    def on_headers_complete(self) -> None:
        found = self._whole()
        if found is None:
            super().on_headers_complete()
            return
        cycle, app = found
        self.cycle = cycle  # type: ignore[assignment]  # read by uvicorn's own callbacks
        self._whole_app = app

    def on_body(self, body: bytes) -> None:
        if type(self.cycle) is WholeCycle:
            self.cycle.parts.append(body)
        else:
            super().on_body(body)

    def on_message_complete(self) -> None:
        cycle = self.cycle
        if type(cycle) is not WholeCycle:
            super().on_message_complete()
            return
        # The scope is still this request's: the next one's begins after this callback.
        task = self.loop.create_task(self._serve_whole(cycle, self.scope, self._whole_app))
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def _whole(self) -> tuple[WholeCycle, Any] | None:
        """The cycle and app of a request to serve whole, or None (uvicorn's way)."""
        parser = self.parser
        if parser.get_method() != b"POST" or parser.should_upgrade():
            return None
        if self.limit_concurrency is not None or not (
            self.cycle is None or self.cycle.response_complete
        ):
            return None  # limits to count against, or a request before it still answering
        length = None
        for name, value in self.headers:
            if name in _UVICORN_HEADERS:
                return None
            if name == b"content-length":
                if length is not None or not value.isdigit():
                    return None
                length = int(value)
        if length is None or length > MAX_BODY_BYTES:
            return None
        scope = self.scope
        http_version = parser.get_http_version()
        scope["method"] = "POST"
        if http_version != "1.1":
            scope["http_version"] = http_version
        parsed = httptools_url(self.url)
        if parsed is None:
            return None
        raw_path, query = parsed
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        scope["path"] = self.root_path + path
        scope["raw_path"] = self.root_path.encode("ascii") + raw_path
        scope["query_string"] = query
        app = self.whole_route(scope)  # type: ignore[arg-type]
        if app is None:
            return None
        keep_alive = http_version != "1.0" and parser.should_keep_alive()
        cycle = WholeCycle(self, keep_alive)
        extensions = {**scope.get("extensions", {}), WHOLE_ANSWER: {"answer": cycle.answer_whole}}
        scope["extensions"] = extensions  # type: ignore[typeddict-item]
        return cycle, app

    async def _serve_whole(self, cycle: WholeCycle, scope: Any, app: Any) -> None:
        try:
            await app(scope, cycle.receive, cycle.send)
        except BaseException as exc:
            log.error("Exception in ASGI application\n", exc_info=exc)
            self._fail(cycle)
            if not isinstance(exc, Exception):
                raise
            return
        if not cycle.response_complete and not cycle.disconnected:
            log.error("ASGI callable returned without completing response.")
            self._fail(cycle)

    async def answer(
        self, cycle: WholeCycle, status: int, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Write the whole answer, then go on as uvicorn does after a response."""
        if self.flow.write_paused and not cycle.disconnected:
            await self.flow.drain()  # a client not reading its answers is not written more
        if cycle.disconnected:
            return
        content = cycle.head(status, headers, len(body))
        content.append(body)
        self.write_answer(b"".join(content))
        cycle.response_complete = True
        cycle.message_event.set()  # a receive waiting for the client to leave: answered now
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()

    def write_answer(self, data: bytes) -> None:
        """Write a whole answer (a subclass may write it past write coalescing: a whole answer
        has nothing to wait for)."""
        self.transport.write(data)

    def _fail(self, cycle: WholeCycle) -> None:
        if cycle.disconnected or self.transport.is_closing():
            return
        if not cycle.response_started:
            failed = [STATUS_LINE[500]]
            failed += [b"%s: %s\r\n" % h for h in self.server_state.default_headers]
            self.transport.write(b"".join(failed) + _FAILED)
        cycle.response_complete = True
        self.transport.close()


def httptools_url(url: bytes) -> tuple[bytes, bytes] | None:
    """The path and query of a request target as uvicorn reads them, or None when httptools
    refuses it (uvicorn's way then answers it)."""
    try:
        parsed = httptools.parse_url(url)
    except httptools.HttpParserInvalidURLError:
        return None
    return parsed.path, parsed.query or b""
