"""The broker's transport over real loopback sockets, on asyncio's loop and on uvloop: the
connection limit, malformed frames, clients leaving at any point, closing the server, and the
real dispatcher behind it. Nothing asserts on elapsed time; conditions are polled with a
deadline.
"""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from pafka.protocol.frames import encode_frame
from pafka.protocol.messages import (
    ApiKey,
    decode_response,
    encode_request,
    request_class,
)
from services.broker.dispatcher import Dispatcher
from services.broker.metrics import BrokerMetrics
from tests.unit.broker_server_util import (
    ID,
    MAX_FRAME_BYTES,
    FakeHandler,
    on_each_loop,
    read_frame,
    read_ids,
    request,
    run,
    serve_tasks,
    serving,
    until,
)

if TYPE_CHECKING:
    from services.broker.broker import Broker


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
