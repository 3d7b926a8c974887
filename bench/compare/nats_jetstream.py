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
Consumers keep two pull requests open for no more than they still need, acknowledge every
message as it arrives (nats-py buffers the acks into few writes), and refuse with a NAK anything
beyond their share, so the server hands it to another worker at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections import deque
from dataclasses import dataclass

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api
from nats.js.client import JetStreamContext

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
from bench.compare.workloads import run_records
from pafka.errors import PafkaError

PUBLISH_BATCH_RECORDS = 1000
MAX_PENDING_ACKS = 4000
FETCH_RECORDS = 1000
# Pull requests open at once: the next is already waiting on the server when one fills.
PIPELINED_REQUESTS = 2
# How long one pull request waits on the server for its batch to fill. Long, so that requests
# end by filling: two requests opened together and expiring together would leave a gap with
# none open, and records arriving in it would wait for the next (a latency run would show it).
PULL_EXPIRES_S = 30.0
PULL_MARGIN_S = 0.5
# How long a consumer that is done (or out of time) still refuses what open requests deliver.
EXIT_WAIT_S = 1.0
HEARTBEAT_STATUS = "100"
# How often the consumer loop looks at its requests when nothing else wakes it.
WAKE_S = 0.1
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
    order = partition_cycle(worker, len(subjects), run_records(workload))
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
        tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
        puller = _Puller(nc, f"$JS.API.CONSUMER.MSG.NEXT.{topic}.{durable}", tally, count)
        await nc.flush()
        progress(0)  # ready: the durable consumer exists since create_stream
        deadline = read_deadline(workload)
        while tally.records < count and time.monotonic() < deadline:
            puller.changed.clear()
            puller.expire(time.monotonic())
            await puller.top_up()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WAKE_S):
                    await puller.changed.wait()
            tally.raise_if_idle(f"{NAME} consumer of {topic}", count)
        # Requests still open may deliver more: refuse it until they end, so that it goes to
        # another worker at once instead of after the ack wait.
        exit_at = time.monotonic() + EXIT_WAIT_S
        while puller.open and time.monotonic() < exit_at:
            puller.changed.clear()
            puller.expire(time.monotonic())
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(WAKE_S):
                    await puller.changed.wait()
        return tally.stats()
    finally:
        await nc.close()


@dataclass
class _Request:
    wanted: int
    # When the client stops waiting for the server to end it: past its expiry on the server.
    given_up_at: float
    subscription: Subscription
    delivered: int = 0


class _Puller:
    """Pull requests on a durable consumer, a few at a time, each on its own inbox.

    JetStream delivers a pulled message under its stream subject, so only the subscription it
    arrives on tells which request it fills. A request ends when its batch is filled, with a
    status message (408 once it expired), or at the latest ``PULL_MARGIN_S`` after its expiry
    (nats-server 2.9 sometimes lets a partly filled request expire without a 408). Every
    message is acknowledged as it arrives; beyond this worker's count it is refused (NAK) so
    that the server hands it to another worker at once.
    """

    def __init__(self, nc: NATS, next_subject: str, tally: ConsumeTally, count: int) -> None:
        self.nc = nc
        self.next_subject = next_subject
        self.tally = tally
        self.count = count
        self.open: dict[int, _Request] = {}
        self.changed = asyncio.Event()
        self._ended: list[Subscription] = []
        self._ids = itertools.count()

    async def top_up(self) -> None:
        """Open requests until ``PIPELINED_REQUESTS`` are open or they cover what is needed."""
        await self.release()
        asked = sum(r.wanted - r.delivered for r in self.open.values())
        need = self.count - self.tally.records - asked
        while need > 0 and len(self.open) < PIPELINED_REQUESTS:
            batch = min(FETCH_RECORDS, need)
            token = next(self._ids)
            inbox = self.nc.new_inbox()

            async def deliver(msg: Msg, token: int = token) -> None:
                await self.on_message(token, msg)

            subscription = await self.nc.subscribe(inbox, cb=deliver)
            given_up_at = time.monotonic() + PULL_EXPIRES_S + PULL_MARGIN_S
            self.open[token] = _Request(batch, given_up_at, subscription)
            request = {"batch": batch, "expires": int(PULL_EXPIRES_S * 1e9)}
            await self.nc.publish(self.next_subject, json.dumps(request).encode(), reply=inbox)
            need -= batch

    def expire(self, now: float) -> None:
        for token, request in list(self.open.items()):
            if now > request.given_up_at:
                self._end(token)

    async def release(self) -> None:
        """Unsubscribe the inboxes of ended requests."""
        ended, self._ended = self._ended, []
        for subscription in ended:
            await subscription.unsubscribe()

    async def on_message(self, token: int, msg: Msg) -> None:
        status = JetStreamContext.is_status_msg(msg)
        if status is not None:
            if status != HEARTBEAT_STATUS:
                self._end(token)
            return
        if self.tally.records < self.count:
            self.tally.add((msg.data,))
            await msg.ack()
        else:
            await msg.nak()
        request = self.open.get(token)
        if request is not None:
            request.delivered += 1
            if request.delivered >= request.wanted:
                self._end(token)

    def _end(self, token: int) -> None:
        request = self.open.pop(token, None)
        if request is not None:
            self._ended.append(request.subscription)
        self.changed.set()


System = JetStreamSystem
ClientDriver = JetStreamClient
