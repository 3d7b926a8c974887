"""The broker's transport over real loopback sockets, on asyncio's loop and on uvloop.

A small fake handler stands in for the dispatcher where the broker's logic is not the point:
a request is its int32 id (plus padding), a response is that id (plus filler). Transport state
(reading paused, writing paused, queued frames, write buffer) is read off the server's own
connection objects; nothing asserts on elapsed time, conditions are polled with a deadline.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest
import uvloop
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import ProtocolError
from pafka.protocol.fetch_codec import FetchableTopicResponse, FetchResponseBody, PartitionData
from pafka.protocol.frames import encode_frame
from pafka.protocol.messages import (
    ApiKey,
    EncodedResponse,
    decode_response,
    encode_request,
    request_class,
)
from services.broker.dispatcher import Dispatcher
from services.broker.metrics import BrokerMetrics
from services.broker.server import MAX_QUEUED_REQUESTS, FrameHandler, KafkaServer, _Connection

if TYPE_CHECKING:
    from services.broker.broker import Broker

T = TypeVar("T")
ID = struct.Struct(">i")
MAX_FRAME_BYTES = 1 << 20
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}
# Every test runs on both loops: the broker uses uvloop when installed, asyncio's otherwise.
on_each_loop = pytest.mark.parametrize("loop", sorted(LOOPS))


def run(loop: str, coro: Coroutine[Any, Any, T]) -> T:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        return runner.run(coro)


class FakeHandler:
    """Answers request ``id`` with ``id`` and ``response_bytes`` of filler, in arrival order."""

    def __init__(
        self, response_bytes: int = 0, yields: Callable[[int], bool] = lambda _: True
    ) -> None:
        self.response_bytes = response_bytes
        # Whether handling request ``id`` gives the loop a turn, as a slow request does.
        self.yields = yields
        self.gate: asyncio.Event | None = None
        self.entered: list[int] = []
        self.handled: list[int] = []
        self.sizes: list[int] = []

    async def __call__(self, frame: bytes | memoryview, client_host: str) -> EncodedResponse:
        (ident,) = ID.unpack_from(frame)
        if ident < 0:
            raise ProtocolError("the fake protocol's malformed request")
        self.entered.append(ident)
        self.sizes.append(len(frame))
        if self.gate is not None:
            await self.gate.wait()
        if self.yields(ident):
            await asyncio.sleep(0)
        self.handled.append(ident)
        return bytearray(encode_frame(ID.pack(ident) + bytes(self.response_bytes)))


class Served:
    """A running server, the connection counts it reported and the protocol errors it counted."""

    def __init__(
        self, server: KafkaServer, port: int, counts: list[int], errors: list[int]
    ) -> None:
        self.server, self.port, self.counts, self.errors = server, port, counts, errors

    def connection(self) -> _Connection:
        (only,) = self.server._connections
        return only

    async def connect(
        self, rcvbuf_bytes: int | None = None
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        sock = socket.socket()
        if rcvbuf_bytes is not None:  # set before connecting, so the TCP window stays small
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        return await asyncio.open_connection(sock=sock)


@asynccontextmanager
async def serving(
    handler: FrameHandler,
    max_connections: int = 10,
) -> AsyncIterator[Served]:
    counts: list[int] = [0]
    errors: list[int] = []
    server = KafkaServer(
        handler,
        max_frame_bytes=MAX_FRAME_BYTES,
        max_connections=max_connections,
        on_connection_count=counts.append,
        on_protocol_error=lambda: errors.append(1),
    )
    port = await server.start("127.0.0.1", 0)
    try:
        yield Served(server, port, counts, errors)
    finally:
        await server.close()


async def until(condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "condition never held"
        await asyncio.sleep(0.002)


def request(ident: int, padding_bytes: int = 0) -> bytes:
    return encode_frame(ID.pack(ident) + bytes(padding_bytes))


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = ID.unpack(await reader.readexactly(4))
    return await reader.readexactly(size)


async def read_ids(reader: asyncio.StreamReader, count: int) -> list[int]:
    return [ID.unpack_from(await read_frame(reader))[0] for _ in range(count)]


def serve_tasks() -> list[asyncio.Task[Any]]:
    """The connection tasks still alive, whether or not the server still counts them."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__qualname__", "") == "_Connection._serve"
    ]


# -- ordering and framing ------------------------------------------------------------------------


@on_each_loop
@settings(max_examples=15)
@given(
    yields=st.lists(st.booleans(), min_size=1, max_size=150),
    padding_bytes=st.integers(0, 3000),
)
def test_pipelined_requests_are_answered_in_order(
    loop: str, yields: list[bool], padding_bytes: int
) -> None:
    async def scenario() -> None:
        handler = FakeHandler(response_bytes=padding_bytes, yields=yields.__getitem__)
        async with serving(handler) as served:
            reader, writer = await served.connect()
            writer.write(b"".join(request(i, padding_bytes) for i in range(len(yields))))
            assert await read_ids(reader, len(yields)) == list(range(len(yields)))
            writer.close()
        assert handler.handled == list(range(len(yields)))

    run(loop, scenario())


@on_each_loop
@settings(max_examples=10)
@given(payloads=st.lists(st.binary(max_size=24), min_size=1, max_size=4), data=st.data())
def test_frames_split_across_reads_reach_the_handler_whole(
    loop: str, payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(encode_frame(ID.pack(i) + p) for i, p in enumerate(payloads))
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(stream) - 1)), label="cuts")))

    async def scenario() -> None:
        handler = FakeHandler()
        async with serving(handler) as served:
            reader, writer = await served.connect()
            await until(lambda: served.counts[-1] == 1)
            connection = served.connection()

            def received() -> int:
                queued = sum(4 + len(f) for f in connection._frames)
                return (
                    connection._decoder.buffered_bytes + queued + sum(4 + n for n in handler.sizes)
                )

            async def arrived(total_bytes: int) -> None:
                await until(lambda: received() == total_bytes)

            start = 0
            for cut in [*cuts, len(stream)]:
                writer.write(stream[start:cut])
                # Waiting for each piece to arrive keeps the chunking the server sees ours.
                await arrived(cut)
                start = cut
            assert await read_ids(reader, len(payloads)) == list(range(len(payloads)))
            writer.close()
        assert handler.sizes == [4 + len(p) for p in payloads]

    run(loop, scenario())


@on_each_loop
@settings(max_examples=10)
@given(
    records=st.lists(st.sampled_from([0, 1, 100, 16 * 1024, 40_000]), min_size=1, max_size=5),
    version=st.sampled_from([4, 11, 12]),
)
def test_fetch_responses_in_pieces_arrive_byte_identical(
    loop: str, records: list[int], version: int
) -> None:
    partitions = [
        PartitionData(i, high_watermark=7, records=bytes([i]) * n) for i, n in enumerate(records)
    ]
    body = FetchResponseBody([FetchableTopicResponse("t", partitions)])

    async def fetch(frame: bytes | memoryview, client_host: str) -> EncodedResponse:
        (ident,) = ID.unpack_from(frame)
        return body.encode_parts(version, ident)

    async def scenario() -> None:
        async with serving(fetch) as served:
            reader, writer = await served.connect()
            writer.write(request(1) + request(2))  # two in one turn: their pieces leave together
            got = [await read_frame(reader) for _ in range(2)]
            writer.close()
        assert got == [bytes(body.encode_frame(version, i))[4:] for i in (1, 2)]

    run(loop, scenario())


# -- flow control --------------------------------------------------------------------------------


@on_each_loop
def test_a_slow_handler_pauses_reading_at_the_queue_limit_and_reading_resumes(loop: str) -> None:
    count, padding_bytes = 2000, 1000  # 2 MB of requests: more than one read, more than 64

    async def scenario() -> None:
        handler = FakeHandler()
        handler.gate = asyncio.Event()
        async with serving(handler) as served:
            reader, writer = await served.connect()
            writer.write(b"".join(request(i, padding_bytes) for i in range(count)))
            await until(lambda: served.counts[-1] == 1)
            connection = served.connection()
            transport = connection._transport
            assert transport is not None
            await until(lambda: not transport.is_reading())
            assert len(connection._frames) >= MAX_QUEUED_REQUESTS
            # Paused before everything was read: the rest waits in the sockets, not in Python.
            assert len(connection._frames) < count - 1
            assert handler.entered == [0]
            assert transport.is_reading() is False
            handler.gate.set()
            assert await read_ids(reader, count) == list(range(count))
            assert transport.is_reading()
            writer.close()

    run(loop, scenario())


@on_each_loop
@pytest.mark.parametrize("yields", [True, False], ids=["yielding", "not-yielding"])
def test_a_client_not_reading_stops_request_handling_until_it_reads(
    loop: str, yields: bool
) -> None:
    count, response_bytes = 1000, 32 * 1024  # 32 MB of responses, far beyond socket buffers

    async def scenario() -> None:
        handler = FakeHandler(response_bytes=response_bytes, yields=lambda _: yields)
        async with serving(handler) as served:
            reader, writer = await served.connect(rcvbuf_bytes=64 * 1024)
            writer.write(b"".join(request(i) for i in range(count)))
            await until(lambda: served.counts[-1] == 1)
            connection = served.connection()
            transport = connection._transport
            assert transport is not None

            def writing_paused() -> bool:
                return connection._writable is not None and not connection._writable.done()

            await until(writing_paused)
            handled = len(handler.handled)
            assert handled < count
            high_water_bytes = transport.get_write_buffer_limits()[1]
            # Beyond the high-water mark, at most the response that crossed it and the one of
            # the request in flight then: later responses are not even made yet.
            frame_bytes = 8 + response_bytes
            assert transport.get_write_buffer_size() <= high_water_bytes + 2 * frame_bytes
            assert connection._pending == []
            for _ in range(100):
                await asyncio.sleep(0)
            assert writing_paused() and len(handler.handled) == handled
            assert await read_ids(reader, count) == list(range(count))
            assert handler.handled == list(range(count))
            writer.close()

    run(loop, scenario())


# -- limits, malformed frames, disconnects -------------------------------------------------------


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True once the server ended the connection, gracefully (EOF) or not (reset)."""
    try:
        return await reader.read(1) == b""
    except ConnectionResetError:
        return True


@on_each_loop
def test_the_connection_limit_refuses_the_next_and_accepts_again_once_one_closes(
    loop: str,
) -> None:
    async def scenario() -> None:
        async with serving(FakeHandler(), max_connections=2) as served:
            first = await served.connect()
            second = await served.connect()
            for n, (reader, writer) in enumerate([first, second]):
                writer.write(request(n))
                assert await read_ids(reader, 1) == [n]
            refused_reader, refused_writer = await served.connect()
            assert await closed_by_server(refused_reader)
            assert max(served.counts) == 2 and served.counts[-1] == 2
            first[1].close()
            await until(lambda: served.counts[-1] == 1)
            reader, writer = await served.connect()
            writer.write(request(7))
            assert await read_ids(reader, 1) == [7]
            assert served.counts[-1] == 2
            for w in (second[1], refused_writer, writer):
                w.close()
            await until(lambda: served.counts[-1] == 0)

    run(loop, scenario())


@on_each_loop
@pytest.mark.parametrize("size", [-1, -(2**31), MAX_FRAME_BYTES + 1, 2**31 - 1])
def test_a_bad_frame_length_closes_the_connection_and_counts_a_protocol_error(
    loop: str, size: int
) -> None:
    async def scenario() -> None:
        handler = FakeHandler()
        async with serving(handler) as served:
            bystander_reader, bystander_writer = await served.connect()
            reader, writer = await served.connect()
            writer.write(ID.pack(size))
            assert await closed_by_server(reader)
            await until(lambda: served.counts[-1] == 1)
            assert served.errors == [1]
            # Refused from its size alone: the handler never saw it, other clients go on.
            assert handler.entered == []
            bystander_writer.write(request(3))
            assert await read_ids(bystander_reader, 1) == [3]
            bystander_writer.close()
            writer.close()

    run(loop, scenario())


@on_each_loop
def test_a_request_the_handler_refuses_closes_only_that_connection(loop: str) -> None:
    async def scenario() -> None:
        async with serving(FakeHandler()) as served:
            reader, writer = await served.connect()
            writer.write(request(1) + request(-1) + request(2))
            assert await read_ids(reader, 1) == [1]
            assert await closed_by_server(reader)
            await until(lambda: served.counts[-1] == 0 and not serve_tasks())
            writer.close()

    run(loop, scenario())


@on_each_loop
@pytest.mark.parametrize("cut", [1, 4, 9])
def test_a_client_leaving_mid_frame_leaves_nothing_behind(loop: str, cut: int) -> None:
    async def scenario() -> None:
        handler = FakeHandler()
        async with serving(handler) as served:
            reader, writer = await served.connect()
            writer.write(request(1) + request(2, padding_bytes=8)[:cut])
            assert await read_ids(reader, 1) == [1]
            writer.close()
            await until(lambda: served.counts[-1] == 0 and not serve_tasks())
            assert served.server._connections == set()
            assert handler.entered == [1]

    run(loop, scenario())


@on_each_loop
def test_a_client_leaving_with_requests_in_flight_leaves_nothing_behind(loop: str) -> None:
    async def scenario() -> None:
        handler = FakeHandler()
        handler.gate = asyncio.Event()
        async with serving(handler) as served:
            _, writer = await served.connect()
            writer.write(b"".join(request(i) for i in range(10)))
            await until(lambda: handler.entered == [0])
            writer.close()
            await until(lambda: served.counts[-1] == 0)
            handler.gate.set()  # the request in flight finishes; its answer has nowhere to go
            await until(lambda: not serve_tasks())
            # The requests still queued were dropped with the connection, not handled.
            assert handler.handled == [0]

    run(loop, scenario())


@on_each_loop
def test_a_client_leaving_with_responses_unread_leaves_nothing_behind(loop: str) -> None:
    async def scenario() -> None:
        handler = FakeHandler(response_bytes=32 * 1024)
        async with serving(handler) as served:
            _, writer = await served.connect(rcvbuf_bytes=64 * 1024)
            writer.write(b"".join(request(i) for i in range(500)))
            await until(lambda: served.counts[-1] == 1)
            connection = served.connection()
            await until(
                lambda: connection._writable is not None and not connection._writable.done()
            )
            handled = len(handler.entered)
            writer.transport.abort()
            await until(lambda: served.counts[-1] == 0 and not serve_tasks())
            # Nothing more was handled for a client that is gone.
            assert len(handler.entered) == handled < 500

    run(loop, scenario())


@on_each_loop
def test_closing_the_server_ends_every_connection(loop: str) -> None:
    async def scenario() -> None:
        handler = FakeHandler()
        handler.gate = asyncio.Event()
        async with serving(handler) as served:
            clients = [await served.connect() for _ in range(3)]
            clients[0][1].write(request(0))
            clients[1][1].write(request(1)[:5])
            await until(lambda: served.counts[-1] == 3 and handler.entered == [0])
            await served.server.close()
            assert served.counts[-1] == 0 and not serve_tasks()
            for reader, writer in clients:
                assert await closed_by_server(reader)
                writer.close()

    run(loop, scenario())


@on_each_loop
def test_the_real_dispatcher_answers_pipelined_requests_and_refuses_a_bad_header(
    loop: str,
) -> None:
    # ApiVersions and malformed headers need nothing of the broker but its metrics.
    metrics = BrokerMetrics()
    dispatcher = Dispatcher(cast("Broker", SimpleNamespace(metrics=metrics)))
    versions = [0, 1, 2] * 30

    async def scenario() -> None:
        async with serving(dispatcher.handle_frame) as served:
            reader, writer = await served.connect()
            writer.write(
                b"".join(
                    encode_request(
                        ApiKey.API_VERSIONS, v, request_class(ApiKey.API_VERSIONS)[v](), i, "t"
                    )
                    for i, v in enumerate(versions)
                )
            )
            for i, v in enumerate(versions):
                frame = await read_frame(reader)
                assert ID.unpack_from(frame)[0] == i
                assert decode_response(ApiKey.API_VERSIONS, v, frame).error_code == 0
            writer.write(encode_frame(struct.pack(">hhi", 9999, 0, 1)))  # no such API
            assert await closed_by_server(reader)
            await until(lambda: served.counts[-1] == 0)
            writer.close()
        assert metrics.registry.get_sample_value("pafka_broker_protocol_errors_total") == 1

    run(loop, scenario())
