"""The client's pipelined connection on real sockets, under asyncio's loop and uvloop's: answers
reach their own callers however the bytes arrive, a caller that stops waiting leaves the others
matched, and a peer that closes or answers out of turn fails every waiting call at once (not at
its deadline).

The peer is a small TCP server that answers each request frame with the request itself, so a
caller can tell its own answer from another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import pytest
import uvloop

from pafka.client.connection import BrokerConnection
from pafka.errors import BrokerConnectionError
from pafka.net.deadlines import NetworkDeadlines
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

SIZE = struct.Struct(">i")
# Calls in these tests are answered at once or fail at once; a deadline this long is never
# what ends one, so a call that does wait for it fails its test by the error it raises.
DEADLINES = NetworkDeadlines(connection_setup_timeout_ms=5000, default_api_timeout_ms=30_000)
PROMPT_S = 5.0

Answer = Callable[[bytes, bytes], bytes | None]  # (correlation id, request frame) -> answer


def echo(correlation: bytes, request: bytes) -> bytes:
    return correlation + request


@contextlib.asynccontextmanager
async def peer(answer: Answer = echo, *, in_pieces: bool = False) -> AsyncIterator[Any]:
    """A server answering each request with ``answer`` (None: close the connection), the
    answers of one read joined in one write, or with ``in_pieces`` sent a byte at a time."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pending = b""
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                pending += data
                out = bytearray()
                # Every whole request of this read answered in one write.
                while len(pending) >= 4 and len(pending) >= 4 + SIZE.unpack_from(pending)[0]:
                    size = SIZE.unpack_from(pending)[0]
                    frame, pending = pending[4 : 4 + size], pending[4 + size :]
                    reply = answer(frame[4:8], frame)
                    if reply is None:
                        writer.write(out)
                        writer.close()
                        return
                    out += SIZE.pack(len(reply)) + reply
                if in_pieces:
                    for i in range(len(out)):
                        writer.write(out[i : i + 1])
                        await writer.drain()
                else:
                    writer.write(out)
                    await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


def request(name: str) -> Any:
    """An ApiVersions request carrying ``name``, which the echo carries back."""
    return request_class(ApiKey.API_VERSIONS)[3](
        client_software_name=name, client_software_version="1"
    )


async def call(connection: BrokerConnection, name: str) -> bytes:
    answer = await connection.call(ApiKey.API_VERSIONS, 3, request(name), raw=True)
    return bytes(answer)


async def opened(port: int) -> BrokerConnection:
    connection = BrokerConnection("127.0.0.1", port, client_id="t", network=DEADLINES)
    await connection.open()
    return connection


LOOPS = ["asyncio", "uvloop"]


def run(loop: str, scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    if loop == "uvloop":
        uvloop.run(scenario())
    else:
        asyncio.run(scenario())


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("in_pieces", [False, True], ids=["joined", "byte-by-byte"])
def test_pipelined_calls_each_get_their_own_answer(loop: str, in_pieces: bool) -> None:
    async def scenario() -> None:
        async with peer(in_pieces=in_pieces) as port:
            connection = await opened(port)
            names = [f"caller-{i:02d}" for i in range(40)]  # none a prefix of another
            answers = await asyncio.wait_for(
                asyncio.gather(*(call(connection, n) for n in names)), PROMPT_S
            )
            for name, answer in zip(names, answers, strict=True):
                assert [n for n in names if n.encode() in answer] == [name]
            assert connection.alive
            await connection.close()

    run(loop, scenario)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_caller_that_stops_waiting_leaves_the_next_answers_matched(loop: str) -> None:
    async def scenario() -> None:
        async with peer() as port:
            connection = await opened(port)
            first = asyncio.ensure_future(call(connection, "abandoned"))
            await asyncio.sleep(0)  # sent, not yet answered
            first.cancel()
            answer = await asyncio.wait_for(call(connection, "next"), PROMPT_S)
            assert b"next" in answer and b"abandoned" not in answer
            assert connection.alive
            await connection.close()

    run(loop, scenario)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_peer_closing_fails_every_waiting_call_at_once(loop: str) -> None:
    def close_at_the_closer(correlation: bytes, frame: bytes) -> bytes | None:
        return None if b"closer" in frame else correlation + frame

    async def scenario() -> None:
        async with peer(close_at_the_closer) as port:
            connection = await opened(port)
            before = [asyncio.ensure_future(call(connection, f"before-{i}")) for i in range(5)]
            closer = asyncio.ensure_future(call(connection, "closer"))
            after = [asyncio.ensure_future(call(connection, f"after-{i}")) for i in range(5)]
            outcomes = await asyncio.wait_for(
                asyncio.gather(*before, closer, *after, return_exceptions=True), PROMPT_S
            )
            # Those the peer answered before closing got their answers; the rest, the error.
            for i, outcome in enumerate(outcomes[:5]):
                assert isinstance(outcome, bytes) and f"before-{i}".encode() in outcome
            for outcome in outcomes[5:]:
                assert isinstance(outcome, BrokerConnectionError)
            assert not connection.alive
            with pytest.raises(BrokerConnectionError, match="closed"):
                await call(connection, "too late")

    run(loop, scenario)


@pytest.mark.parametrize("loop", LOOPS)
def test_an_answer_out_of_turn_ends_the_connection(loop: str) -> None:
    def wrong_correlation(correlation: bytes, frame: bytes) -> bytes:
        (got,) = SIZE.unpack(correlation)
        return SIZE.pack(got + 1000) + frame

    async def scenario() -> None:
        async with peer(wrong_correlation) as port:
            connection = await opened(port)
            with pytest.raises(BrokerConnectionError, match="correlation id"):
                await asyncio.wait_for(call(connection, "misanswered"), PROMPT_S)
            assert not connection.alive

    run(loop, scenario)


@pytest.mark.parametrize("loop", LOOPS)
def test_calls_held_back_by_a_full_socket_fail_when_the_peer_goes(loop: str) -> None:
    async def scenario() -> None:
        accepted: list[asyncio.StreamWriter] = []

        async def never_read(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            accepted.append(writer)

        server = await asyncio.start_server(never_read, "127.0.0.1", 0)
        try:
            connection = await opened(server.sockets[0].getsockname()[1])
            big = "x" * (1 << 20)
            calls = [asyncio.ensure_future(call(connection, big)) for _ in range(32)]
            await asyncio.sleep(0.2)
            assert connection._answers is not None and connection._answers.writing_paused
            accepted[0].transport.abort()
            outcomes = await asyncio.wait_for(
                asyncio.gather(*calls, return_exceptions=True), PROMPT_S
            )
            assert all(isinstance(o, BrokerConnectionError) for o in outcomes)
            assert not connection.alive
        finally:
            server.close()

    run(loop, scenario)
