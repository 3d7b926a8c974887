"""Fetch record sets sent with sendfile from segment files, against the pread path they replace.

Real logs on disk, real loopback sockets, both event loops. Every check compares the bytes a
client receives with the frame the same response encodes with its record sets read into memory
(the path used before file regions, and still the fallback), so a region must cover exactly the
bytes a plain read returns and the writer must keep frames whole and in order. ``os.sendfile``
is wrapped only to count its calls, so a test can tell that the direct path was taken.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pafka.protocol.fetch_codec import (
    SEPARATE_RECORDS_BYTES,
    FetchableTopicResponse,
    FetchResponseBody,
    PartitionData,
)
from pafka.protocol.messages import EncodedResponse
from pafka.records.encoding import build_batch
from pafka.storage import layout
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.region import FileRegion
from services.broker import server
from tests.unit.broker_server_util import (
    ID,
    Served,
    on_each_loop,
    read_frame,
    request,
    run,
    serving,
    until,
)

VERSIONS = [4, 11, 12]


class _Duplicates:
    """Descriptors made by ``os.dup`` (file regions, the direct sender's watch) and not yet
    closed. Counted at the calls rather than in /proc/self/fd, which the test process's other
    threads (clients and servers of other tests in the session) change at any time."""

    def __init__(self) -> None:
        self.open: set[int] = set()

    def settled(self) -> set[int]:
        # Finalizers close regions nobody sent; uvloop keeps a pipe of its own once a loop ran.
        for loop in ("asyncio", "uvloop"):
            run(loop, asyncio.sleep(0))
        gc.collect()
        return set(self.open)


@contextmanager
def tracked_duplicates() -> Iterator[_Duplicates]:
    duplicates = _Duplicates()
    real_dup, real_close = os.dup, os.close

    def dup(fd: int) -> int:
        new = real_dup(fd)
        duplicates.open.add(new)
        return new

    def close(fd: int) -> None:
        duplicates.open.discard(fd)
        real_close(fd)

    with mock.patch("os.dup", dup), mock.patch("os.close", close):
        yield duplicates


def filled_log(
    path: Path, value_sizes: list[int], segment_bytes: int, index_interval_bytes: int = 4096
) -> Log:
    """A log of one batch per value size (one record each), rolled every ``segment_bytes``."""
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval_bytes)
    log = Log.open(path, config)
    for i, size in enumerate(value_sizes):
        batch = build_batch([(None, bytes([i % 256]) * size, [])], timestamp_ms=1000 + i)
        log.append(batch, leader_epoch=0, now_ms=0)
    log.high_watermark = log.log_end_offset
    return log


layouts = st.lists(
    st.sampled_from([0, 10, 500, 5_000, 16 * 1024, 40_000, 100_000]), min_size=1, max_size=40
)


@contextmanager
def counted_sendfile(direct: bool) -> Iterator[list[tuple[int, int | None]]]:
    """(bytes asked, bytes sent or None when it would block) of every ``os.sendfile`` call;
    with ``direct`` False the transport is treated as one without a socket (TLS, say)."""
    calls: list[tuple[int, int | None]] = []
    real = os.sendfile

    def sendfile(out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        try:
            sent = real(out_fd, in_fd, offset, count)
        except BlockingIOError:
            calls.append((count, None))
            raise
        calls.append((count, sent))
        return sent

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "sendfile", sendfile)
        if not direct:
            patch.setattr(server, "socket_fd", lambda transport: None)
        yield calls


# -- the region covers exactly what a read returns -----------------------------------------------


# Small batches as often as large ones: byte limits then fall near batch and index boundaries.
storage_layouts = st.lists(
    st.sampled_from([0, 10, 60, 500]) | st.sampled_from([5_000, 16 * 1024, 40_000, 100_000]),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    sizes=storage_layouts,
    segment_bytes=st.sampled_from([1, 20_000, 200_000, 1 << 30]),
    index_interval_bytes=st.sampled_from([1, 600, 4096, 1 << 20]),
    start=st.floats(0, 1),
    max_bytes=st.integers(1, 3_000) | st.integers(1, 400_000),
    max_offset=st.none() | st.integers(0, 40),
    min_region_bytes=st.sampled_from([1, SEPARATE_RECORDS_BYTES]),
)
def test_a_region_holds_exactly_the_bytes_a_read_returns(
    sizes: list[int],
    segment_bytes: int,
    index_interval_bytes: int,
    start: float,
    max_bytes: int,
    max_offset: int | None,
    min_region_bytes: int,
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = filled_log(Path(directory) / "t-0", sizes, segment_bytes, index_interval_bytes)
        offset = int(start * log.log_end_offset)
        expected = bytes(log.read(offset, max_bytes, max_offset=max_offset))
        got = log.read_for_send(
            offset, max_bytes, max_offset=max_offset, min_region_bytes=min_region_bytes
        )
        if isinstance(got, FileRegion):
            assert len(got) >= min_region_bytes
            assert got.read() == expected
            got.close()
        else:
            assert len(expected) < min_region_bytes or not expected
            assert bytes(got) == expected
        log.close()


@pytest.mark.parametrize("index_interval_bytes", [1, 200, 1 << 20])
def test_a_region_matches_a_read_at_every_offset_and_many_limits(
    index_interval_bytes: int,
) -> None:
    """Small batches, every start offset, limits a few bytes apart: each limit falls next to
    batch and index boundaries somewhere (random layouts reach those cases only rarely)."""
    with tempfile.TemporaryDirectory() as directory:
        sizes = [10, 60, 500, 0, 200] * 6
        log = filled_log(Path(directory) / "t-0", sizes, 1 << 30, index_interval_bytes)
        total = log.size_bytes
        for offset in range(log.log_end_offset):
            for max_bytes in range(1, total + 100, 17):
                for max_offset in (None, 17):
                    expected = bytes(log.read(offset, max_bytes, max_offset=max_offset))
                    got = log.read_for_send(
                        offset, max_bytes, max_offset=max_offset, min_region_bytes=1
                    )
                    assert (got.read() if isinstance(got, FileRegion) else got) == expected
                    if isinstance(got, FileRegion):
                        got.close()
        log.close()


# -- the wire: identical frames by sendfile and by the fallback ----------------------------------


def fetch_body(log: Log, reads: list[tuple[int, int]], as_regions: bool) -> FetchResponseBody:
    partitions = []
    for index, (offset, max_bytes) in enumerate(reads):
        records: Any
        if as_regions:
            records = log.read_for_send(
                offset, max_bytes, max_offset=None, min_region_bytes=SEPARATE_RECORDS_BYTES
            )
        else:
            records = bytes(log.read(offset, max_bytes))
        partitions.append(PartitionData(index, high_watermark=log.high_watermark, records=records))
    return FetchResponseBody([FetchableTopicResponse("t", partitions)])


def fetch_reads(log: Log, draws: list[tuple[float, int]]) -> list[tuple[int, int]]:
    return [(int(at * log.log_end_offset), max_bytes) for at, max_bytes in draws]


class LogFetcher:
    """Answers request ``id`` with a Fetch response of ``reads[id]``, record sets as regions."""

    def __init__(self, log: Log, reads: list[list[tuple[int, int]]], version: int) -> None:
        self.log, self.reads, self.version = log, reads, version

    async def __call__(self, frame: bytes | memoryview, session: object) -> EncodedResponse:
        (ident,) = ID.unpack_from(frame)
        return fetch_body(self.log, self.reads[ident], True).encode_parts(self.version, ident)

    def expected(self, ident: int) -> bytes:
        body = fetch_body(self.log, self.reads[ident], False)
        return bytes(body.encode_frame(self.version, ident))[4:]


draws = st.lists(st.tuples(st.floats(0, 1), st.integers(1, 300_000)), min_size=1, max_size=3)


@on_each_loop
@pytest.mark.parametrize("direct", [True, False], ids=["sendfile", "fallback"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=layouts,
    requests=st.lists(draws, min_size=1, max_size=4),
    version=st.sampled_from(VERSIONS),
)
def test_pipelined_fetches_arrive_byte_identical_and_in_order(
    loop: str,
    direct: bool,
    sizes: list[int],
    requests: list[list[tuple[float, int]]],
    version: int,
) -> None:
    with tracked_duplicates() as duplicates:
        with tempfile.TemporaryDirectory() as directory, counted_sendfile(direct) as calls:
            log = filled_log(Path(directory) / "t-0", sizes, 150_000)
            fetcher = LogFetcher(log, [fetch_reads(log, d) for d in requests], version)
            expected = [fetcher.expected(i) for i in range(len(requests))]

            async def scenario() -> list[bytes]:
                async with serving(fetcher) as served:
                    reader, writer = await served.connect()
                    writer.write(b"".join(request(i) for i in range(len(requests))))
                    got = [await read_frame(reader) for _ in requests]
                    writer.close()
                    return got

            assert run(loop, scenario()) == expected
            # A record set goes out as a region only when it alone is that large: a frame of
            # several smaller record sets is larger and has none.
            any_region = any(
                len(log.read(offset, max_bytes)) >= SEPARATE_RECORDS_BYTES
                for read in fetcher.reads
                for offset, max_bytes in read
            )
            if not direct:
                assert calls == []
            elif any_region:
                assert calls, "no record set went out by sendfile"
            log.close()
        assert duplicates.settled() == set()


def small_send_buffers(served: Served) -> None:
    """Connections accepted from now on start with a small send buffer (they inherit it)."""
    assert served.server._servers
    listening = served.server._servers[0].sockets[0]
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)


@on_each_loop
def test_a_slow_reader_gets_the_exact_stream_through_partial_sends(loop: str) -> None:
    """Small socket buffers on both ends: sendfile stops part way through regions and goes on
    once the socket is writable, and the frames queued behind wait their turn."""
    with tracked_duplicates() as duplicates:
        with tempfile.TemporaryDirectory() as directory, counted_sendfile(True) as calls:
            log = filled_log(
                Path(directory) / "t-0", [100_000, 30_000, 200_000, 50_000] * 4, 300_000
            )
            end = log.log_end_offset
            reads = [[(i % end, 400_000), ((i * 5) % end, 70_000)] for i in range(12)]
            fetcher = LogFetcher(log, reads, 12)
            expected = [fetcher.expected(i) for i in range(len(reads))]

            async def scenario() -> list[bytes]:
                async with serving(fetcher) as served:
                    small_send_buffers(served)
                    reader, writer = await served.connect(rcvbuf_bytes=4096)
                    writer.write(b"".join(request(i) for i in range(len(reads))))
                    got = []
                    for _ in reads:
                        await asyncio.sleep(0.005)  # slower than the server writes
                        got.append(await read_frame(reader))
                    writer.close()
                    return got

            assert run(loop, scenario()) == expected
            sent_part = [c for c in calls if c[1] is None or c[1] < c[0]]
            assert sent_part, "the socket never filled during a sendfile"
            region_bytes = sum(
                len(records)
                for read in reads
                for offset, max_bytes in read
                if len(records := log.read(offset, max_bytes)) >= SEPARATE_RECORDS_BYTES
            )
            assert sum(sent or 0 for _, sent in calls) == region_bytes  # none read into memory
            log.close()
        assert duplicates.settled() == set()


@on_each_loop
def test_a_segment_deleted_by_retention_after_its_region_is_taken_is_still_served(
    loop: str,
) -> None:
    with tracked_duplicates() as duplicates:
        with tempfile.TemporaryDirectory() as directory, counted_sendfile(True) as calls:
            path = Path(directory) / "t-0"
            log = filled_log(path, [60_000] * 6, 100_000)  # one batch per segment
            expected_records = bytes(log.read(0, 1 << 20))
            before_deletion = FetchResponseBody(
                [
                    FetchableTopicResponse(
                        "t", [PartitionData(0, high_watermark=6, records=expected_records)]
                    )
                ]
            )
            expected = bytes(before_deletion.encode_frame(12, 7))[4:]
            first_segment = layout.log_file(path, 0)

            async def fetch(frame: bytes | memoryview, session: object) -> EncodedResponse:
                (ident,) = ID.unpack_from(frame)
                records = log.read_for_send(
                    0, 1 << 20, max_offset=None, min_region_bytes=SEPARATE_RECORDS_BYTES
                )
                log.roll()
                log.delete_records_before(log.log_end_offset)
                assert not first_segment.exists()
                partition = PartitionData(0, high_watermark=log.high_watermark, records=records)
                body = FetchResponseBody([FetchableTopicResponse("t", [partition])])
                return body.encode_parts(12, ident)

            async def scenario() -> bytes:
                async with serving(fetch) as served:
                    reader, writer = await served.connect()
                    writer.write(request(7))
                    frame = await read_frame(reader)
                    writer.close()
                    return frame

            frame = run(loop, scenario())
            assert calls and all(sent is not None for _, sent in calls)
            assert frame == expected
            assert len(expected_records) > SEPARATE_RECORDS_BYTES  # one whole batch, as a region
            log.close()
        assert duplicates.settled() == set()


@on_each_loop
def test_a_client_leaving_mid_sendfile_leaks_no_descriptor(loop: str) -> None:
    with tracked_duplicates() as duplicates:
        with tempfile.TemporaryDirectory() as directory, counted_sendfile(True) as calls:
            log = filled_log(Path(directory) / "t-0", [1_000_000] * 8, 1 << 30)
            fetcher = LogFetcher(log, [[(0, 8 << 20)]] * 20, 12)

            async def scenario() -> None:
                async with serving(fetcher) as served:
                    reader, writer = await served.connect(rcvbuf_bytes=4096)
                    writer.write(b"".join(request(i) for i in range(20)))
                    await reader.readexactly(1000)
                    await until(lambda: bool(calls))
                    transport = writer.transport
                    sock = transport.get_extra_info("socket")
                    # A reset rather than a FIN: the server's next send fails outright.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    transport.abort()
                    await until(lambda: served.counts[-1] == 0)
                    # The server is still up for others, and serves them.
                    reader, writer = await served.connect()
                    writer.write(request(3))
                    assert len(await read_frame(reader)) > 8_000_000
                    writer.close()

            run(loop, scenario())
            log.close()
        assert duplicates.settled() == set()


@on_each_loop
def test_a_client_that_stops_sending_still_gets_the_response_being_sent(loop: str) -> None:
    with tracked_duplicates() as duplicates:
        with tempfile.TemporaryDirectory() as directory, counted_sendfile(True) as calls:
            log = filled_log(Path(directory) / "t-0", [1_000_000] * 2, 1 << 30)
            fetcher = LogFetcher(log, [[(0, 4 << 20)]], 12)
            expected = fetcher.expected(0)

            async def scenario() -> tuple[bytes, bytes]:
                async with serving(fetcher) as served:
                    small_send_buffers(served)
                    reader, writer = await served.connect(rcvbuf_bytes=4096)
                    writer.write(request(0))
                    await until(lambda: bool(calls))  # the response is being sent
                    writer.write_eof()  # a half-close: the client still reads
                    frame = await read_frame(reader)
                    after = await reader.read()  # then the server closes the connection
                    writer.close()
                    return frame, after

            assert run(loop, scenario()) == (expected, b"")
            # The socket filled: the sender was still holding bytes when the EOF came.
            assert any(sent is None or sent < asked for asked, sent in calls)
            log.close()
        assert duplicates.settled() == set()
