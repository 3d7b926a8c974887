"""Follow reads (``follow=true`` with ``Accept: application/vnd.pafka.batches``) on real
processes: batches written to the open answer as they are appended, the stream's ends (records
asked, idle time, the client leaving), the errors answered before it starts, and what a follow
read of another format is told.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import signal
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pafka.local.ports import free_port
from pafka.records.batch import HEADER_SIZE, read_header
from pafka.records.encoding import decode_records
from tests.integration.gateway_process import start_gateway, wait_ready

BATCHES = "application/vnd.pafka.batches"
V2_BINARY = "application/vnd.kafka.binary.v2+json"
ARRIVAL_S = 10.0
STOP_WITHIN_S = 15.0


def new_topic(cluster: Any, prefix: str, partitions: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=partitions, replication_factor=3)
    return name


async def produce(client: httpx.AsyncClient, topic: str, value: bytes, partition: int = 0) -> int:
    answer = await client.post(
        f"/topics/{topic}/partitions/{partition}",
        json={"records": [{"value": base64.b64encode(value).decode()}]},
        headers={"Content-Type": V2_BINARY},
    )
    assert answer.status_code == 200, answer.text
    offset: int = answer.json()["offsets"][0]["offset"]
    return offset


class Batches:
    """The records of a follow stream as its bytes arrive, batch by batch."""

    def __init__(self, response: httpx.Response) -> None:
        self.chunks = response.aiter_raw()
        self.pending = b""
        self.records: list[tuple[int, bytes | None]] = []

    async def until(self, count: int) -> list[tuple[int, bytes | None]]:
        """Read on until ``count`` records have come (the stream must not end first)."""
        async with asyncio.timeout(ARRIVAL_S):
            while len(self.records) < count:
                self.pending += await anext(self.chunks)
                self._take_whole()
        return self.records

    async def to_end(self) -> list[tuple[int, bytes | None]]:
        async with asyncio.timeout(ARRIVAL_S):
            async for chunk in self.chunks:
                self.pending += chunk
                self._take_whole()
        assert self.pending == b"", "the stream ended inside a batch"
        return self.records

    def _take_whole(self) -> None:
        while len(self.pending) >= HEADER_SIZE:
            header = read_header(self.pending, 0)
            if header.size > len(self.pending):
                return
            batch, self.pending = self.pending[: header.size], self.pending[header.size :]
            self.records += [(r.offset, r.value) for r in decode_records(batch)]


def in_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """An async test run to its end in a loop of its own (fixtures are given as to a plain one)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


def follow(
    client: httpx.AsyncClient, topic: str, offset: int, partition: int = 0, **query: Any
) -> Any:
    return client.stream(
        "GET",
        f"/topics/{topic}/partitions/{partition}/records",
        params={"offset": offset, "follow": "true", **query},
        headers={"Accept": BATCHES},
    )


def open_follow_reads(base: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        if family.name == "pafka_gateway_follow_reads":
            return sum(sample.value for sample in family.samples)
    raise AssertionError("no pafka_gateway_follow_reads in the gateway's metrics")


@in_loop
async def test_batches_come_as_they_are_appended_until_the_records_asked(cluster: Any) -> None:
    topic = new_topic(cluster, "follow-live")
    async with httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30) as client:
        for value in (b"before-0", b"before-1"):
            await produce(client, topic, value)
        async with follow(client, topic, 1, max_records=4, timeout_ms=20_000) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == BATCHES
            assert response.headers["pafka-high-watermark"] == "2"
            stream = Batches(response)
            assert await stream.until(1) == [(1, b"before-1")]
            # Each record arrives while the stream is open, before the next one exists.
            for n in (2, 3):
                offset = await produce(client, topic, f"live-{n}".encode())
                assert (await stream.until(n))[-1] == (offset, f"live-{n}".encode())
            offset = await produce(client, topic, b"live-4")
            # Four offsets passed (1 to 4): the stream ends after the batch holding the last.
            assert await stream.to_end() == [
                (1, b"before-1"),
                (2, b"live-2"),
                (3, b"live-3"),
                (4, b"live-4"),
            ]
            assert offset == 4


@in_loop
async def test_streams_of_many_partitions_each_get_their_own_records(cluster: Any) -> None:
    """Six streams wait on six partitions (their Fetches shared by leader); records written
    to some partitions reach those streams only, in order, while the others wait on."""
    partitions = 6
    topic = new_topic(cluster, "follow-many", partitions)
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30)
        )
        streams = []
        for p in range(partitions):
            response = await stack.enter_async_context(
                follow(client, topic, 0, p, max_records=2, timeout_ms=20_000)
            )
            assert response.status_code == 200
            streams.append(Batches(response))
        for round_ in range(2):
            for p in range(0, partitions, 2):
                await produce(client, topic, b"p%d-%d" % (p, round_), p)
            for p in range(0, partitions, 2):
                got = await streams[p].until(round_ + 1)
                assert got == [(n, b"p%d-%d" % (p, n)) for n in range(round_ + 1)]
        for p in range(1, partitions, 2):
            assert streams[p].records == []
            await produce(client, topic, b"late-%d" % p, p)
            assert await streams[p].until(1) == [(0, b"late-%d" % p)]
        for p in range(0, partitions, 2):  # two records asked: these streams have ended
            assert await streams[p].to_end() == [(0, b"p%d-0" % p), (1, b"p%d-1" % p)]


@in_loop
async def test_a_read_committed_stream_passes_markers_and_aborted_records(cluster: Any) -> None:
    """Committed records come once their transaction commits; an aborted transaction's never
    do, and the markers between are passed without ending the stream."""
    from confluent_kafka import Producer

    topic = new_topic(cluster, "follow-txn")
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "transactional.id": f"t-{uuid.uuid4()}"}
    )
    await asyncio.to_thread(producer.init_transactions, 60)

    def transaction(values: list[bytes], commit: bool) -> None:
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value, partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    async with (
        httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30) as client,
        follow(client, topic, 0, isolation="read_committed", timeout_ms=20_000) as response,
    ):
        assert response.status_code == 200
        stream = Batches(response)
        await asyncio.to_thread(transaction, [b"c0", b"c1"], True)
        assert await stream.until(2) == [(0, b"c0"), (1, b"c1")]
        await asyncio.to_thread(transaction, [b"a0", b"a1"], False)
        await asyncio.to_thread(transaction, [b"c2"], True)
        # After the first marker (2), the aborted records (3, 4) and their marker (5).
        assert await stream.until(3) == [(0, b"c0"), (1, b"c1"), (6, b"c2")]


@in_loop
async def test_a_stream_ends_when_nothing_comes_for_timeout_ms(cluster: Any) -> None:
    topic = new_topic(cluster, "follow-idle")
    async with httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30) as client:
        await produce(client, topic, b"only")
        started = time.monotonic()
        # follow=1 is FastAPI's spelling of true too (the hot path takes only true and false).
        async with client.stream(
            "GET",
            f"/topics/{topic}/partitions/0/records",
            params={"offset": 0, "follow": "1", "timeout_ms": 400},
            headers={"Accept": BATCHES},
        ) as response:
            assert response.status_code == 200
            assert await Batches(response).to_end() == [(0, b"only")]
        assert time.monotonic() - started >= 0.4


@in_loop
async def test_a_client_that_leaves_ends_its_stream(cluster: Any) -> None:
    topic = new_topic(cluster, "follow-leave")
    base = cluster.gateways[0]
    before = open_follow_reads(base)
    async with (
        httpx.AsyncClient(base_url=base, timeout=30) as client,
        follow(client, topic, 0, timeout_ms=25_000) as response,
    ):
        assert response.status_code == 200
        assert open_follow_reads(base) == before + 1
    # The connection is closed: the gateway stops the stream without waiting out its idle time.
    deadline = time.monotonic() + ARRIVAL_S
    while open_follow_reads(base) != before:
        assert time.monotonic() < deadline, "the stream outlived its client"
        await asyncio.sleep(0.05)


@in_loop
async def test_errors_before_the_stream_are_those_of_a_read(cluster: Any) -> None:
    topic = new_topic(cluster, "follow-errors")
    async with httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30) as client:
        await produce(client, topic, b"x")
        for path, offset in (
            (f"/topics/{topic}/partitions/7/records", 0),
            (f"/topics/{topic}/partitions/0/records", 99),
        ):
            once = await client.get(path, params={"offset": offset}, headers={"Accept": BATCHES})
            followed = await client.get(
                path, params={"offset": offset, "follow": "true"}, headers={"Accept": BATCHES}
            )
            assert once.status_code >= 400
            assert (followed.status_code, followed.json()) == (once.status_code, once.json())


def test_a_gateway_shutting_down_ends_its_streams(cluster: Any, tmp_path: Path) -> None:
    """SIGTERM ends a follow read cleanly (its last chunk) rather than waiting out its idle
    time, and the gateway exits."""
    topic = new_topic(cluster, "follow-shutdown")
    port = free_port()
    log_path = tmp_path / "gateway.log"
    process = start_gateway(cluster.zk_connect, port, log_path, {})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, process, log_path)
        asyncio.run(_shut_down_while_following(url, topic, process))
        assert process.wait(STOP_WITHIN_S) == 0, log_path.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def _shut_down_while_following(url: str, topic: str, process: Any) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await produce(client, topic, b"before")
        async with follow(client, topic, 0, timeout_ms=25_000) as response:
            stream = Batches(response)
            assert await stream.until(1) == [(0, b"before")]
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert await stream.to_end() == [(0, b"before")]
            assert time.monotonic() - started < STOP_WITHIN_S


@pytest.mark.parametrize("accept", [V2_BINARY, "application/x-ndjson", "*/*"])
@in_loop
async def test_a_follow_read_streams_batches_only(cluster: Any, accept: str) -> None:
    topic = new_topic(cluster, "follow-format")
    async with httpx.AsyncClient(base_url=cluster.gateways[0], timeout=30) as client:
        answer = await client.get(
            f"/topics/{topic}/partitions/0/records",
            params={"offset": 0, "follow": "true"},
            headers={"Accept": accept},
        )
    assert answer.status_code == 406
    assert answer.json()["error_code"] == 40601
    assert BATCHES in answer.json()["message"]
