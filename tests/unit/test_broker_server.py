"""The broker's transport over real loopback sockets, on asyncio's loop and on uvloop:
ordering, framing and flow control (limits and disconnects: test_broker_server_limits.py).

A small fake handler stands in for the dispatcher where the broker's logic is not the point:
a request is its int32 id (plus padding), a response is that id (plus filler). Transport state
(reading paused, writing paused, queued frames, write buffer) is read off the server's own
connection objects; nothing asserts on elapsed time, conditions are polled with a deadline.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.protocol.fetch_codec import FetchableTopicResponse, FetchResponseBody, PartitionData
from pafka.protocol.frames import encode_frame
from pafka.protocol.messages import EncodedResponse
from services.broker.server import MAX_QUEUED_REQUESTS
from tests.unit.broker_server_util import (
    ID,
    FakeHandler,
    on_each_loop,
    read_frame,
    read_ids,
    request,
    run,
    serving,
    until,
)

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

    async def fetch(frame: bytes | memoryview, session: object) -> EncodedResponse:
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
            # The request in flight when writing paused may still finish and its response be
            # flushed at the end of a later turn: let that settle before looking.
            for _ in range(100):
                await asyncio.sleep(0)
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
