"""pafka through its REST gateway: batched binary POSTs in, followed range reads out.

The servers are the same local cluster as :mod:`bench.compare.pafka_kafka`, plus one gateway
process (``PAFKA_GATEWAY_WORKERS=1``: the comparison's figures are per gateway process; the
runner also paces it at 50% of its own peak, ``runner.OWN_PACED``). Producers keep
``IN_FLIGHT`` requests in flight, each on its own keep-alive connection (``bench.gateway``'s
minimal HTTP/1.1 client, so the gateway is what is measured, not an HTTP library), each a
``POST /topics/{t}/partitions/{p}?acks=`` of up to ``BATCH_RECORDS`` base64 records
(``application/vnd.kafka.binary.v2+json``), all stamped with the moment the request is made
(it goes out whole); partitions take turns, so each gets the same number of records.

Consumers use the stateless range reads (``GET /topics/{t}/partitions/{p}/records``), followed
(``follow=true``: one answer per partition that stays open, each batch written to it as it is
appended, each Fetch behind it asking as many bytes as the Kafka-protocol consumer's partition
fetch; a stream idle for ``READ_WAIT_MS`` ends and is opened again from where it stopped), not
group membership: consumer ``w`` of ``C`` reads partitions ``p`` with ``p % C == w`` (whole
partitions, as a group would give them) from offset 0, one connection per partition. So no
join, heartbeat or commit is measured. They ask for the batch format
(``application/vnd.pafka.batches``, the only one a follow read streams), what a program reading
REST in bulk uses (the JSON formats are for people and scripts), and decode every record of it
as whole batches arrive, each batch's CRC checked, so each record is checked as the other
systems' are, from a decoded value. The batches are Kafka's own v2 layout, so any Kafka record
decoder reads them: these consumers use aiokafka's (compiled), as the Kafka-protocol consumers
decode in librdkafka and the Redis ones in hiredis; a consumer decoding in Python, record by
record, took a quarter of a core at the paced rate, time the measured servers then waited for
on a shared machine.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Coroutine
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import orjson
from aiokafka.record.memory_records import MemoryRecords

from bench.compare import pafka_kafka
from bench.compare.client_loop import (
    ChunkedProgress,
    ConsumeTally,
    apaced_batches,
    read_deadline,
    send_deadline,
)
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, Progress, Workload, stamp
from bench.gateway import HttpClient
from pafka.errors import CorruptMessageError
from pafka.records.batch import HEADER_SIZE, read_header

NAME = "pafka-rest"
DURABILITY = (
    "as pafka-kafka (page cache, fsync every 5 s); a 200 from the gateway means every record "
    "of the request was acknowledged by the leader at the acks asked"
)
BINARY = "application/vnd.kafka.binary.v2+json"
BATCHES = "application/vnd.pafka.batches"
IN_FLIGHT = 8
BATCH_RECORDS = 500
# A read brings what the Kafka-protocol consumer's partition fetch may (the gateway caps it at
# its PAFKA_GATEWAY_MAX_FETCH_BYTES, 8 MiB by default); a record count would cap it lower for
# small records, and a reader that fell behind could not catch up a fetch at a time.
READ_BYTES = pafka_kafka.PARTITION_FETCH_BYTES
READ_WAIT_MS = 500
IDLE_TIMEOUT_S = pafka_kafka.IDLE_TIMEOUT_S
T = TypeVar("T")


class System(pafka_kafka.System):
    """The pafka cluster of :class:`pafka_kafka.System` with one REST gateway."""

    name = NAME
    durability = DURABILITY
    gateways = 1
    gateway_env: ClassVar[dict[str, str]] = {"PAFKA_GATEWAY_WORKERS": "1"}


def _gateway(endpoint: Endpoint) -> tuple[str, int]:
    url = urlsplit(endpoint.extra["gateway-1"])
    return url.hostname or "127.0.0.1", url.port or 80


def _run(job: Coroutine[Any, Any, T]) -> T:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(job)
    return uvloop.run(job)


class ClientDriver:
    def produce(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ProduceStats:
        return _run(_produce(endpoint, topic, workload, worker, count, progress))

    def consume(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ConsumeStats:
        return _run(_consume(endpoint, topic, workload, worker, count, progress))


def _partition_shares(count: int, partitions: int, worker: int) -> dict[int, int]:
    """Records per partition for one producer, in the order the partitions take turns
    (starting one further along per worker, so that workers fill partitions evenly)."""
    start = worker % partitions
    turns = [*range(start, partitions), *range(start)]
    return {
        p: count // partitions + (1 if i < count % partitions else 0) for i, p in enumerate(turns)
    }


async def _produce(
    endpoint: Endpoint, topic: str, workload: Workload, worker: int, count: int, progress: Progress
) -> ProduceStats:
    host, port = _gateway(endpoint)
    remaining = _partition_shares(count, workload.partitions, worker)
    order = list(remaining)
    deadline = send_deadline(workload)
    work: asyncio.Queue[tuple[int, int] | None] = asyncio.Queue(maxsize=IN_FLIGHT * 2)
    chunks = ChunkedProgress(progress)
    failures: list[str] = []
    rate_per_s = None if workload.rate_per_s is None else workload.rate_per_s / workload.producers

    async def feed() -> None:
        turn = 0
        async for due in apaced_batches(count, rate_per_s, BATCH_RECORDS):
            if time.monotonic() > deadline:
                break
            while due:
                partition = order[turn % len(order)]
                turn += 1
                n = min(due, remaining[partition])
                if n:
                    remaining[partition] -= n
                    due -= n
                    await work.put((partition, n))
        for _ in range(IN_FLIGHT):
            await work.put(None)

    async def send(client: HttpClient) -> None:
        while (item := await work.get()) is not None:
            partition, n = item
            size = workload.message_size_bytes
            body = _produce_body(size, n)
            head = (
                f"POST /topics/{topic}/partitions/{partition}?acks={workload.acks} HTTP/1.1\r\n"
                f"Host: {host}\r\nContent-Type: {BINARY}\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            status, answer = await client.request(head, body)
            if status != 200:
                failures.append(f"{status} {answer[:300]!r}")
                return
            chunks.add(n)

    clients = [await HttpClient.open(host, port) for _ in range(IN_FLIGHT)]
    started = time.perf_counter()
    feeder = asyncio.create_task(feed())
    await asyncio.gather(*(send(c) for c in clients))
    seconds = time.perf_counter() - started
    feeder.cancel()
    for client in clients:
        client.close()
    chunks.flush()
    if failures:
        raise RuntimeError(f"{NAME} producer {worker}: a produce failed: {failures[0]}")
    sent = count - sum(remaining.values())
    return ProduceStats(records=sent, bytes=sent * workload.message_size_bytes, seconds=seconds)


def _produce_body(size_bytes: int, records: int) -> bytes:
    """A produce request of ``records`` base64 values of ``size_bytes``, all stamped now: the
    request goes out whole, so one stamp is every record's send time, and the body is built
    without a pass per record (a third of a producer's time went to stamping and encoding each)."""
    record = orjson.dumps({"value": base64.b64encode(stamp(size_bytes)).decode()})
    return b'{"records":[' + b",".join([record] * records) + b"]}"


async def _consume(
    endpoint: Endpoint, topic: str, workload: Workload, worker: int, count: int, progress: Progress
) -> ConsumeStats:
    host, port = _gateway(endpoint)
    mine = [p for p in range(workload.partitions) if p % workload.consumers == worker]
    per_partition = count // len(mine)
    progress(0)  # range reads need no join: ready at once
    tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
    drain_at = read_deadline(workload)

    async def read(partition: int) -> None:
        client = await HttpClient.open(host, port)
        where = f"{NAME} consumer {worker}, partition {partition}"
        offset = 0
        try:
            while offset < per_partition and time.monotonic() < drain_at:
                head = (
                    f"GET /topics/{topic}/partitions/{partition}/records?offset={offset}"
                    f"&max_records={per_partition - offset}&max_bytes={READ_BYTES}"
                    f"&timeout_ms={READ_WAIT_MS}&follow=true HTTP/1.1\r\n"
                    f"Host: {host}\r\nAccept: {BATCHES}\r\n\r\n"
                ).encode()
                status, _, whole = await client.start(head)
                if status != 200 or whole is not None:
                    raise RuntimeError(f"{where}: {status} {(whole or b'')[:300]!r}")
                offset = await follow(client, partition, offset, where)
        finally:
            client.close()

    async def follow(client: HttpClient, partition: int, offset: int, where: str) -> int:
        """Read one follow stream to its end; the offset to go on from."""
        pending = b""
        while chunk := await client.next_chunk():
            pending += chunk
            end, next_offset = _whole_batches(pending)
            if end:
                tally.add(_values(pending[:end], offset, per_partition))
                offset, pending = min(next_offset, per_partition), pending[end:]
            tally.raise_if_idle(where, count)
        if pending:
            raise RuntimeError(f"{where}: the stream ended inside a batch")
        tally.raise_if_idle(where, count)
        return offset

    await asyncio.gather(*(read(p) for p in mine))
    return tally.stats()


def _whole_batches(data: bytes) -> tuple[int, int]:
    """How many leading bytes of ``data`` are whole batches, and the offset after them (0, 0
    when none is whole yet)."""
    end = next_offset = 0
    while len(data) - end >= HEADER_SIZE:
        header = read_header(data, end)
        if end + header.size > len(data):
            break
        end, next_offset = end + header.size, header.next_offset
    return end, next_offset


def _values(body: bytes, start: int, until: int) -> list[bytes]:
    """The values of the records of ``body`` (whole batches) with offsets in ``[start, until)``,
    every batch's CRC checked; control batches hold none."""
    values: list[bytes] = []
    records = MemoryRecords(body)
    while (batch := records.next_batch()) is not None:
        if not batch.validate_crc():
            raise CorruptMessageError(f"the batch at offset {batch.base_offset} fails its CRC")
        if batch.is_control_batch or batch.next_offset <= start or batch.base_offset >= until:
            continue
        if start <= batch.base_offset and batch.next_offset <= until:
            values += [record.value for record in batch]
        else:
            values += [record.value for record in batch if start <= record.offset < until]
    return values
