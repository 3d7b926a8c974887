"""A throttled client's connection (KIP-219): its answer leaves at once, then the broker reads
nothing more from it until the throttle ends, file regions still going out by ``sendfile``.

Real loopback sockets on both event loops. The mute is long beside the short pause that shows
the next request waiting, so the check does not depend on the machine's speed.
"""

from __future__ import annotations

import asyncio
import os
import tempfile

from pafka.protocol.frames import encode_frame
from pafka.protocol.messages import EncodedResponse
from pafka.storage.region import FileRegion
from services.broker.server import Throttled
from tests.unit.broker_server_util import (
    ID,
    on_each_loop,
    read_frame,
    read_ids,
    request,
    run,
    serving,
    until,
)

MUTE_MS = 1500
# Well inside the mute: long enough for a connection that was not muted to handle a request.
PAUSE_S = 0.2


class ThrottlingHandler:
    """Answers request ``id`` with ``id``; request 0 owes a throttle."""

    def __init__(self, body: EncodedResponse | None = None, mute_ms: int = MUTE_MS) -> None:
        self.handled: list[int] = []
        self.body = body
        self.mute_ms = mute_ms

    async def __call__(self, frame: bytes | memoryview, session: object) -> object:
        (ident,) = ID.unpack_from(frame)
        self.handled.append(ident)
        answer: EncodedResponse = bytearray(encode_frame(ID.pack(ident)))
        if ident == 0:
            return Throttled(self.body if self.body is not None else answer, self.mute_ms)
        return answer


@on_each_loop
def test_a_throttled_answer_leaves_at_once_and_the_connection_is_muted(loop: str) -> None:
    handler = ThrottlingHandler()

    async def scenario() -> None:
        async with serving(handler) as served:  # type: ignore[arg-type]
            reader, writer = await served.connect()
            writer.write(request(0) + request(1))
            assert await read_ids(reader, 1) == [0]
            await asyncio.sleep(PAUSE_S)
            assert handler.handled == [0], "a request was read during the throttle"
            assert served.connection().idle_since(asyncio.get_running_loop().time()) == 0.0
            assert await read_ids(reader, 1) == [1]  # after the throttle, served as usual
            writer.write(request(2))
            assert await read_ids(reader, 1) == [2]
            writer.close()

    run(loop, scenario())


@on_each_loop
def test_a_throttled_answer_with_a_file_region_arrives_whole(loop: str) -> None:
    payload = os.urandom(300_000)
    with tempfile.TemporaryFile() as f:
        f.write(payload)
        f.flush()
        header = ID.pack(4 + len(payload)) + ID.pack(0)
        region = FileRegion.of(f.fileno(), 0, len(payload))
        handler = ThrottlingHandler([header, region])

        async def scenario() -> bytes:
            async with serving(handler) as served:  # type: ignore[arg-type]
                reader, writer = await served.connect()
                writer.write(request(0) + request(1))
                got = await read_frame(reader)
                await until(lambda: region.closed)  # sent, and its descriptor released
                assert await read_ids(reader, 1) == [1]
                writer.close()
                return got

        assert run(loop, scenario()) == ID.pack(0) + payload
