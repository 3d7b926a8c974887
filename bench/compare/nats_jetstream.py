"""NATS JetStream as a peer of pafka in the comparison benchmark.

For the runner (``bench.compare.registry``): the module-level names ``System`` and
``ClientDriver`` are the classes :class:`JetStreamSystem` and :class:`JetStreamClient`;
``ClientDriver()`` is stateless and pickles into worker processes. A consumer calls
``progress(0)`` once it can receive.

Shape: a topic of N partitions is one file-storage stream named after the topic with subjects
``{topic}.{p}``, and one durable pull consumer ``bench`` (AckAll) shared by every consumer
worker, so any number of workers shares any number of partitions. Producers spread records
round-robin over the subjects with asynchronous acknowledged publishes (``publish_async``, at
most ``MAX_PENDING_ACKS`` unacknowledged), and return once every publish is acknowledged.
Consumers ``fetch`` no more than they still need and acknowledge each batch by acking its last
message (AckAll covers everything before it).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import socket
import time
from collections import deque
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import nats
import nats.errors
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
from bench.compare.peer_server import PeerSystem
from pafka.errors import ConfigError, PafkaError

NAME = "nats-jetstream"
DURABLE = "bench"
PUBLISH_BATCH_RECORDS = 1000
MAX_PENDING_ACKS = 4000
FETCH_RECORDS = 1000
FETCH_TIMEOUT_S = 1.0
IDLE_TIMEOUT_S = 60.0
# Unacknowledged messages the server hands out before it waits for acks: the fetch batches of
# every worker, with room to spare.
MAX_ACK_PENDING = 1_000_000
MAX_FILE_STORE_BYTES = 64 * 1024**3
MAX_MEMORY_STORE_BYTES = 256 * 1024**2

DURABILITY = (
    "RF 1: one nats-server (no cluster), so acks=all is acks=1 here. JetStream file storage, "
    "acknowledged publishes: the server acknowledges once the message is written to the "
    "stream's block file (OS page cache); nats-server 2.9 has no sync option (sync_interval "
    "came in 2.10) and fsyncs blocks on its fixed background timer (60 s in 2.9's file store). "
    "pafka, for comparison: an acknowledged write is in the page cache of the leader's log "
    "(acks=1) or of every in-sync replica's (acks=all), fsynced by the broker's checkpoint "
    "every 5 s."
)

T = TypeVar("T")

# JetStream stream names may not hold '.', '*', '>', path separators or whitespace.
_STREAM_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a client loop on uvloop when it is installed: nats-py is pure Python, and the loop's
    own overhead is a large share of each publish and fetch."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def check_topic(topic: str) -> str:
    if not _STREAM_NAME.match(topic):
        raise ConfigError(
            f"{NAME}: topic {topic!r} is not a valid stream name (letters, digits, '_' and '-')"
        )
    return topic


def subject_names(topic: str, partitions: int) -> list[str]:
    check_topic(topic)
    if partitions < 1:
        raise ConfigError(f"partitions must be at least 1, got {partitions}")
    return [f"{topic}.{p}" for p in range(partitions)]


def render_config(server_name: str, port: int, store_dir: Path) -> str:
    """nats-server config for a private, loopback-only JetStream server."""
    return "\n".join(
        [
            f"server_name: {json.dumps(server_name)}",
            'host: "127.0.0.1"',
            f"port: {port}",
            "jetstream {",
            f"  store_dir: {json.dumps(str(store_dir))}",
            f"  max_memory_store: {MAX_MEMORY_STORE_BYTES}",
            f"  max_file_store: {MAX_FILE_STORE_BYTES}",
            "}",
            "",
        ]
    )


def server_info(address: str, timeout_s: float = 1.0) -> dict[str, object] | None:
    """The INFO a NATS server greets every connection with, or None if nothing answers."""
    host, _, port = address.removeprefix("nats://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
            greeting = sock.makefile("rb").readline()
    except OSError:
        return None
    if not greeting.startswith(b"INFO "):
        return None
    info: dict[str, object] = json.loads(greeting[5:])
    return info


def _answers_as(address: str, server_name: str) -> bool:
    info = server_info(address)
    if info is None:
        return False
    if info.get("server_name") != server_name or not info.get("jetstream"):
        raise PafkaError(f"the NATS server on {address} is not ours ({server_name}): {info}")
    return True


class JetStreamSystem(PeerSystem):
    """One nats-server child process with JetStream, its store under the run's workdir."""

    name = NAME
    durability = DURABILITY
    binary = "nats-server"
    package = "nats-server"

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        data_dir, port = self._prepare(workdir / "nats")
        # A fresh name per start proves the server answering is this child, not a packaged one.
        server_name = f"pafka-bench-{secrets.token_hex(4)}"
        config = data_dir / "nats.conf"
        config.write_text(render_config(server_name, port, data_dir / "jetstream"))
        address = f"nats://127.0.0.1:{port}"
        self._launch(
            ["-c", str(config)],
            data_dir / "nats.log",
            lambda _pid: _answers_as(address, server_name),
        )
        return Endpoint(system=NAME, address=address, extra={"durable": DURABLE})

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        _run(_create_stream(endpoint.address, topic, workload.partitions))


async def _create_stream(address: str, topic: str, partitions: int) -> None:
    subject_names(topic, partitions)  # validates
    nc = await nats.connect(address, allow_reconnect=False)
    try:
        js = nc.jetstream()
        await js.add_stream(
            api.StreamConfig(
                name=topic,
                subjects=[f"{topic}.*"],
                storage=api.StorageType.FILE,
                retention=api.RetentionPolicy.LIMITS,
                num_replicas=1,
            )
        )
        await js.add_consumer(
            topic,
            api.ConsumerConfig(
                durable_name=DURABLE,
                deliver_policy=api.DeliverPolicy.ALL,
                ack_policy=api.AckPolicy.ALL,
                max_ack_pending=MAX_ACK_PENDING,
            ),
        )
    finally:
        await nc.close()


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
        return _run(_produce(endpoint.address, topic, workload, worker, count, progress))

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
        return _run(_consume(endpoint.address, topic, durable, workload, count, progress))


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
    nc = await nats.connect(address, allow_reconnect=False)
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
    nc = await nats.connect(address, allow_reconnect=False)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe_bind(durable=durable, stream=topic)
        progress(0)  # ready: bound to the durable consumer, which exists since create_stream
        tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
        deadline = read_deadline(workload)
        while tally.records < count and time.monotonic() < deadline:
            remaining = count - tally.records
            try:
                msgs = await sub.fetch(batch=min(FETCH_RECORDS, remaining), timeout=FETCH_TIMEOUT_S)
            except nats.errors.TimeoutError:
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
