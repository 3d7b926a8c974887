"""NATS JetStream as a peer of pafka in the comparison benchmark.

For the runner (``bench.compare.registry``): the module-level names ``System`` and
``ClientDriver`` are the classes :class:`JetStreamSystem` and :class:`JetStreamClient`;
``ClientDriver()`` is stateless and pickles into worker processes. A consumer calls
``progress(0)`` once it can receive.

The servers and streams are in :mod:`bench.compare.nats_server`: a topic of N partitions is one
stream with subjects ``{topic}.{p}`` and one durable pull consumer shared by every consumer
worker, so any number of workers shares any number of partitions. Producers spread records
round-robin over the subjects with asynchronous acknowledged publishes (``publish_async``, at
most ``MAX_PENDING_ACKS`` unacknowledged), and return once every publish is acknowledged.
Consumers ``fetch`` no more than they still need and acknowledge each batch by acking its last
message (AckAll covers everything before it).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

import nats
from nats.js import api

from bench.compare.client_loop import (
    ChunkedProgress,
    ConsumeTally,
    apaced_batches,
    partition_cycle,
    read_deadline,
    send_deadline,
    worker_rate_per_s,
)
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, Progress, Workload, stamp
from bench.compare.nats_server import (
    DURABLE,
    NAME,
    JetStreamSystem,
    check_topic,
    run_loop,
    server_urls,
    subject_names,
)
from pafka.errors import PafkaError

PUBLISH_BATCH_RECORDS = 1000
MAX_PENDING_ACKS = 4000
FETCH_RECORDS = 1000
FETCH_TIMEOUT_S = 1.0
IDLE_TIMEOUT_S = 60.0


class JetStreamClient:
    """Producer and consumer loops; stateless, so it pickles into worker processes."""

    def produce(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ProduceStats:
        return run_loop(_produce(endpoint.address, topic, workload, worker, count, progress))

    def consume(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ConsumeStats:
        durable = endpoint.extra.get("durable", DURABLE)
        return run_loop(_consume(endpoint.address, topic, durable, workload, count, progress))


async def _produce(
    address: str, topic: str, workload: Workload, worker: int, count: int, progress: Progress
) -> ProduceStats:
    # acks=all needs nothing more than acks=1 at RF 1 (see DURABILITY).
    subjects = subject_names(topic, workload.partitions)
    rate_per_s = worker_rate_per_s(workload.rate_per_s, workload.producers)
    order = partition_cycle(worker, len(subjects))
    size = workload.message_size_bytes
    chunks = ChunkedProgress(progress)
    sent = sent_bytes = 0
    nc = await nats.connect(server_urls(address), allow_reconnect=False)
    try:
        js = nc.jetstream(publish_async_max_pending=MAX_PENDING_ACKS)
        pending: deque[asyncio.Future[api.PubAck]] = deque()
        started = time.monotonic()
        deadline = send_deadline(workload)
        async for batch in apaced_batches(count, rate_per_s, PUBLISH_BATCH_RECORDS):
            if time.monotonic() > deadline:
                break
            for _ in range(batch):
                payload = stamp(size)
                pending.append(await js.publish_async(subjects[next(order)], payload))
                sent_bytes += len(payload)
            sent += batch
            # Collect settled acks as we go: result() raises a refused publish at once.
            while pending and pending[0].done():
                _check_ack(pending.popleft().result(), topic)
            chunks.add(batch)
        for ack in await asyncio.gather(*pending):
            _check_ack(ack, topic)
        seconds = time.monotonic() - started
    finally:
        await nc.close()
    chunks.flush()
    return ProduceStats(records=sent, bytes=sent_bytes, seconds=seconds)


def _check_ack(ack: api.PubAck, topic: str) -> None:
    if ack.stream != topic:
        raise PafkaError(f"{NAME}: a publish to {topic} was stored in stream {ack.stream}")


async def _consume(
    address: str, topic: str, durable: str, workload: Workload, count: int, progress: Progress
) -> ConsumeStats:
    check_topic(topic)
    nc = await nats.connect(server_urls(address), allow_reconnect=False)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe_bind(durable=durable, stream=topic)
        progress(0)  # ready: bound to the durable consumer, which exists since create_stream
        tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
        deadline = read_deadline(workload)
        while tally.records < count and time.monotonic() < deadline:
            remaining = count - tally.records
            # nats-py raises its own TimeoutError or the builtin one, depending on where the
            # fetch timed out; the builtin is the base of both.
            try:
                msgs = await sub.fetch(batch=min(FETCH_RECORDS, remaining), timeout=FETCH_TIMEOUT_S)
            except TimeoutError:
                tally.raise_if_idle(f"{NAME} consumer of {topic}", count)
                continue
            # A fetch may hand over leftovers of an expired earlier request too; take only what
            # this worker needs and leave the rest unacknowledged for redelivery.
            taken = msgs[:remaining]
            if taken:
                tally.add(msg.data for msg in taken)
                await taken[-1].ack()
        return tally.stats()
    finally:
        await nc.close()


System = JetStreamSystem
ClientDriver = JetStreamClient
