"""Redis Streams as a peer of pafka in the comparison benchmark.

For the runner (``bench.compare.registry``): the module-level names ``System`` and
``ClientDriver`` are the classes :class:`RedisStreamsSystem` and :class:`RedisStreamsClient`;
``ClientDriver()`` is stateless and pickles into worker processes. A consumer calls
``progress(0)`` once it can receive.

Shape: a topic of N partitions is N streams ``{topic}-{p}``, each with the consumer group
``bench`` created at id 0 (``XGROUP CREATE ... MKSTREAM``). Producers spread records round-robin
over the streams and send ``XADD`` in pipelines (no MULTI) of up to 1000 commands per round
trip. Consumer workers are members of the group: when the partitions divide evenly among them
each reads its own whole streams, as a Kafka group assigns partitions; otherwise all read all
streams and each ``XREADGROUP`` asks for no more than the worker still needs (the group hands
each entry to one member, so the workers' counts add up). The entries of a read are
``XACK``-ed in one pipeline. Replies of ``XREADGROUP`` are taken raw from
the hiredis parser, skipping redis-py's conversion into dicts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from bench.compare.client_loop import (
    ChunkedProgress,
    ConsumeTally,
    paced_batches,
    partition_cycle,
    read_deadline,
    send_deadline,
    worker_rate_per_s,
)
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, Progress, Workload, stamp
from bench.compare.peer_server import PeerSystem
from bench.compare.workloads import run_records
from pafka.errors import ConfigError, PafkaError

NAME = "redis-streams"
GROUP = "bench"
FIELD = b"v"
PIPELINE_RECORDS = 1000
READ_RECORDS = 5000
BLOCK_MS = 100
SUBSET_BLOCK_MS = 10
IDLE_TIMEOUT_S = 60.0

DURABILITY = (
    "RF 1: one redis-server, Redis Streams do not replicate within a server, so acks=all is "
    "acks=1 here (WAIT has no replicas to wait for; WAITAOF only came in Redis 7.2). "
    "appendonly yes, appendfsync everysec: an acknowledged XADD is in the append-only file "
    "(OS page cache) before the reply and fsynced within about 1 s. pafka, for comparison: an "
    "acknowledged write is in the page cache of the leader's log (acks=1) or of every in-sync "
    "replica's (acks=all), fsynced by the broker's checkpoint every 5 s."
)


def stream_names(topic: str, partitions: int) -> list[str]:
    if not topic:
        raise ConfigError("topic must not be empty")
    if partitions < 1:
        raise ConfigError(f"partitions must be at least 1, got {partitions}")
    return [f"{topic}-{p}" for p in range(partitions)]


def worker_streams(streams: Sequence[str], consumers: int, worker: int) -> tuple[list[str], bool]:
    """The streams a consumer worker reads, and whether they are its alone.

    When the partitions divide evenly among the consumers, each worker owns whole partitions
    (``p % consumers == worker``), as a Kafka group would assign them, and its share of the
    records is exactly what its streams hold. Otherwise every worker reads every stream and the
    group hands each entry to one of them.
    """
    if consumers < 1:
        raise ConfigError(f"consumers must be at least 1, got {consumers}")
    if len(streams) % consumers == 0:
        return list(streams[worker % consumers :: consumers]), True
    return list(streams), False


def read_plan(
    streams: Sequence[str], remaining: int, max_records: int, rotation: int, exclusive: bool
) -> tuple[list[str], int]:
    """The streams one XREADGROUP asks and its COUNT, which Redis applies per stream.

    On streams shared with other workers the read returns at most ``min(remaining,
    max_records)`` entries, so a worker never takes entries another worker still needs;
    ``rotation`` turns the stream order so that, when fewer entries than streams remain,
    successive reads ask different streams. On a worker's own streams every stream may return
    up to that many: nobody else needs what they hold.
    """
    if not streams:
        raise ConfigError("no streams to read")
    budget = min(remaining, max_records)
    if budget < 1:
        raise ConfigError(f"nothing left to read (remaining {remaining}, max {max_records})")
    if exclusive:
        return list(streams), budget
    start = rotation % len(streams)
    rotated = [*streams[start:], *streams[:start]]
    if budget >= len(rotated):
        return rotated, budget // len(rotated)
    return rotated[:budget], 1


def render_config(port: int, data_dir: Path, log_path: Path) -> str:
    """redis.conf for a private, loopback-only server with an everysec append-only file."""
    return "\n".join(
        [
            "bind 127.0.0.1",
            f"port {port}",
            "protected-mode yes",
            "daemonize no",
            "supervised no",
            f'dir "{data_dir}"',
            f'logfile "{log_path}"',
            # The AOF is the durability under test; RDB snapshots would only add fork noise.
            'save ""',
            "appendonly yes",
            "appendfsync everysec",
            'appenddirname "appendonlydir"',
            "",
        ]
    )


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"Redis address must be host:port, got {address!r}")
    return host, int(port)


def _connect(address: str) -> redis.Redis:
    host, port = _parse_address(address)
    # RESP2 so raw replies have the shape the consumer parses; hiredis parses when installed.
    return redis.Redis(host=host, port=port, protocol=2, socket_timeout=30.0)


def _raw_reply(response: Any, **_options: Any) -> Any:
    return response


class RedisStreamsSystem(PeerSystem):
    """One redis-server child process under the run's workdir."""

    name = NAME
    durability = DURABILITY
    binary = "redis-server"
    package = "redis-server"

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        data_dir, (port,) = self._prepare(workdir / "redis")
        config = data_dir / "redis.conf"
        config.write_text(render_config(port, data_dir, data_dir / "redis.log"))
        address = f"127.0.0.1:{port}"
        self._launch([str(config)], data_dir / "stdout.log", lambda pid: _answers_as(address, pid))
        return Endpoint(system=NAME, address=address, extra={"group": GROUP})

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        client = _connect(endpoint.address)
        try:
            pipe = client.pipeline(transaction=False)
            for stream in stream_names(topic, workload.partitions):
                pipe.execute_command("XGROUP", "CREATE", stream, GROUP, "0", "MKSTREAM")
            pipe.execute()
        finally:
            client.close()


def _answers_as(address: str, pid: int) -> bool:
    """True once the server at ``address`` answers and is our child ``pid``."""
    client = _connect(address)
    try:
        info = client.info("server")
    except redis.ConnectionError:
        return False
    finally:
        client.close()
    if info.get("process_id") != pid:
        raise PafkaError(
            f"the Redis answering on {address} is pid {info.get('process_id')}, not ours ({pid})"
        )
    return True


class RedisStreamsClient:
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
        # acks=all needs nothing more than acks=1 at RF 1 (see DURABILITY).
        streams = stream_names(topic, workload.partitions)
        rate_per_s = worker_rate_per_s(workload.rate_per_s, workload.producers)
        order = partition_cycle(worker, len(streams), run_records(workload))
        size = workload.message_size_bytes
        chunks = ChunkedProgress(progress)
        sent = sent_bytes = 0
        client = _connect(endpoint.address)
        try:
            started = time.monotonic()
            deadline = send_deadline(workload)
            for batch in paced_batches(count, rate_per_s, PIPELINE_RECORDS):
                if time.monotonic() > deadline:
                    break
                pipe = client.pipeline(transaction=False)
                for _ in range(batch):
                    payload = stamp(size)
                    pipe.execute_command("XADD", streams[next(order)], "*", FIELD, payload)
                    sent_bytes += len(payload)
                pipe.execute()  # raises the first error reply
                sent += batch
                chunks.add(batch)
            seconds = time.monotonic() - started
        finally:
            client.close()
        chunks.flush()
        return ProduceStats(records=sent, bytes=sent_bytes, seconds=seconds)

    def consume(
        self,
        endpoint: Endpoint,
        topic: str,
        workload: Workload,
        worker: int,
        count: int,
        progress: Progress,
    ) -> ConsumeStats:
        streams, exclusive = worker_streams(
            stream_names(topic, workload.partitions), workload.consumers, worker
        )
        group = endpoint.extra.get("group", GROUP)
        member = f"worker-{worker}-{os.getpid()}"
        client = _connect(endpoint.address)
        client.set_response_callback("XREADGROUP", _raw_reply)
        try:
            client.ping()
            progress(0)  # ready: the group exists, so this member receives from now on
            tally = ConsumeTally(progress, IDLE_TIMEOUT_S)
            deadline = read_deadline(workload)
            rotation = worker
            while tally.records < count and time.monotonic() < deadline:
                left = count - tally.records
                ask, per_stream = read_plan(streams, left, READ_RECORDS, rotation, exclusive)
                rotation += 1
                # A read of only some shared streams may miss records waiting on the others.
                block_ms = BLOCK_MS if len(ask) == len(streams) else SUBSET_BLOCK_MS
                reply = client.execute_command(
                    "XREADGROUP", "GROUP", group, member, "COUNT", per_stream,
                    "BLOCK", block_ms, "STREAMS", *ask, *([">"] * len(ask)),
                )  # fmt: skip
                if not reply:
                    tally.raise_if_idle(f"{NAME} consumer {worker} of {topic}", count)
                    continue
                acks = client.pipeline(transaction=False)
                for stream, entries in reply:
                    # An entry is [id, [field, value]]; the payload is the only value. Own
                    # streams may hold more than this worker's count only if the producers sent
                    # more than the run expected; those are acknowledged, not counted.
                    tally.add(fields[1] for _, fields in entries[: max(0, left)])
                    left -= len(entries)
                    acks.execute_command("XACK", stream, group, *[entry[0] for entry in entries])
                acks.execute()
        finally:
            client.close()
        return tally.stats()


System = RedisStreamsSystem
ClientDriver = RedisStreamsClient
