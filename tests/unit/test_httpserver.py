"""The embedded HTTP server: a taken port fails the start, on a real socket."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import httpx
import pytest

from pafka.httpserver import start_http
from pafka.local.ports import free_port

Send = Callable[[dict[str, object]], Awaitable[None]]


async def hello(scope: dict[str, object], receive: object, send: Send) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_a_taken_port_raises_in_the_caller() -> None:
    async def scenario() -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            with pytest.raises(OSError, match="in use"):
                await start_http(hello, "127.0.0.1", taken.getsockname()[1])

    asyncio.run(scenario())


def test_the_server_answers_once_started() -> None:
    async def scenario() -> None:
        port = free_port()
        server, task = await start_http(hello, "127.0.0.1", port)
        try:
            async with httpx.AsyncClient() as client:
                answer = await client.get(f"http://127.0.0.1:{port}/")
            assert (answer.status_code, answer.text) == (200, "hello")
        finally:
            server.should_exit = True
            await task

    asyncio.run(scenario())
