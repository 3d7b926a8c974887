"""The benchmark's peer systems against their real servers (Debian's redis-server, nats-server).

Each system is started as the runner starts it: a child process on a free loopback port with its
data under a workdir. Producers and consumers run through the ``ClientDriver`` in this process,
on threads, so that two of each overlap as worker processes would.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import psutil
import pytest
import redis

from bench.compare import nats_jetstream, nats_server, redis_streams
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, Workload
from pafka.errors import ConfigError

MODULES = {"redis-streams": redis_streams, "nats-jetstream": nats_jetstream}
DEFAULT_PORTS = {"redis-streams": 6379, "nats-jetstream": 4222}
# A record that took longer than this end to end means the measurement is broken, not slow.
SANE_LATENCY_US = 120_000_000


@dataclass
class Peer:
    name: str
    module: Any
    system: Any
    endpoint: Endpoint
    workdir: Path

    def driver(self) -> Any:
        return self.module.ClientDriver()


@pytest.fixture(scope="module", params=list(MODULES))
def peer(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Peer]:
    name = request.param
    module = MODULES[name]
    system = module.System()
    system.install()
    workdir = tmp_path_factory.mktemp(name)
    endpoint = system.start(workdir, Workload(name="setup"))
    try:
        yield Peer(name, module, system, endpoint, workdir)
    finally:
        system.stop()


class Recorder:
    """A progress callback that remembers every call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, records: int) -> None:
        self.calls.append(records)

    def check(self, records: int) -> None:
        counts = [c for c in self.calls if c]
        assert sum(counts) == records
        # Chunks for the progress bar, not a call per record.
        assert all(c >= 1000 for c in counts[:-1]), counts
        assert len(counts) <= records // 1000 + 1


def _run_workers(
    peer: Peer, topic: str, workload: Workload, per_worker: int
) -> tuple[list[ProduceStats], list[ConsumeStats], list[Recorder], list[Recorder]]:
    producers = [Recorder() for _ in range(workload.producers)]
    consumers = [Recorder() for _ in range(workload.consumers)]
    driver = peer.driver()
    with ThreadPoolExecutor(workload.producers + workload.consumers) as pool:
        reading = [
            pool.submit(driver.consume, peer.endpoint, topic, workload, w, per_worker, rec)
            for w, rec in enumerate(consumers)
        ]
        writing = [
            pool.submit(driver.produce, peer.endpoint, topic, workload, w, per_worker, rec)
            for w, rec in enumerate(producers)
        ]
        produced = [f.result(timeout=120) for f in writing]
        consumed = [f.result(timeout=120) for f in reading]
    return produced, consumed, producers, consumers


def test_server_is_our_own_child_with_its_data_in_the_workdir(peer: Peer) -> None:
    (pid,) = peer.system.server_pids()
    process = psutil.Process(pid)
    assert process.ppid() == os.getpid()
    port = int(peer.endpoint.address.rpartition(":")[2])
    assert port != DEFAULT_PORTS[peer.name]
    listening = {c.laddr.port for c in process.net_connections("tcp") if c.status == "LISTEN"}
    assert port in listening
    if peer.name == "redis-streams":
        client = redis.Redis.from_url(f"redis://{peer.endpoint.address}")
        try:
            data_dir = client.config_get("dir")["dir"]
        finally:
            client.close()
        assert Path(str(data_dir)) == (peer.workdir / "redis").resolve()
    else:
        assert str(peer.workdir.resolve()) in " ".join(process.cmdline())
    assert peer.system.durability.startswith("RF 1")


def test_produce_and_consume_a_few_thousand_records(peer: Peer) -> None:
    workload = Workload(
        name="round-trip", message_size_bytes=100, partitions=3, producers=2, consumers=2,
        message_count=4000,
    )  # fmt: skip
    topic = "round-trip"
    peer.system.create_stream(peer.endpoint, topic, workload)
    per_worker = workload.message_count // 2
    produced, consumed, producers, consumers = _run_workers(peer, topic, workload, per_worker)

    for sent, recorder in zip(produced, producers, strict=True):
        assert (sent.records, sent.bytes) == (per_worker, per_worker * 100)
        assert sent.seconds > 0
        recorder.check(per_worker)
    for read, recorder in zip(consumed, consumers, strict=True):
        assert (read.records, read.bytes) == (per_worker, per_worker * 100)
        assert len(read.latencies_us) == per_worker
        assert all(0 <= lat < SANE_LATENCY_US for lat in read.latencies_us)
        assert recorder.calls[0] == 0  # ready before the first record
        recorder.check(per_worker)
    _check_server_side(peer, topic, workload.partitions, workload.message_count)


def _check_server_side(peer: Peer, topic: str, partitions: int, total: int) -> None:
    """Everything stored, spread over every partition, and acknowledged by the group."""
    if peer.name == "redis-streams":
        client = redis.Redis.from_url(f"redis://{peer.endpoint.address}")
        try:
            lengths = [client.xlen(s) for s in redis_streams.stream_names(topic, partitions)]
            pending = [
                client.xpending(s, redis_streams.GROUP)["pending"]
                for s in redis_streams.stream_names(topic, partitions)
            ]
            config = client.config_get("append*")
        finally:
            client.close()
        assert sum(lengths) == total and min(lengths) > 0
        assert pending == [0] * partitions
        assert (config["appendonly"], config["appendfsync"]) == ("yes", "everysec")
        assert any((peer.workdir / "redis" / "appendonlydir").iterdir())
        return
    stream, consumer = asyncio.run(_jetstream_state(peer.endpoint.address, topic))
    assert stream.state.messages == total
    assert stream.config.storage == nats.js.api.StorageType.FILE
    assert stream.config.num_replicas == 1
    assert consumer.config.ack_policy == nats.js.api.AckPolicy.EXPLICIT
    assert (consumer.num_pending, consumer.num_ack_pending) == (0, 0)
    assert any((peer.workdir / "nats" / "jetstream").rglob("*.blk"))


ACK_SETTLE_POLLS = 50


async def _jetstream_state(address: str, topic: str) -> tuple[Any, Any]:
    """The stream and its durable consumer once the consumer's acks have reached the server
    (a worker's last acks are published without waiting; a bounded wait, then as found)."""
    nc = await nats.connect(nats_server.server_urls(address))
    try:
        js = nc.jetstream()
        stream = await js.stream_info(topic)
        for _ in range(ACK_SETTLE_POLLS):
            consumer = await js.consumer_info(topic, nats_server.DURABLE)
            if consumer.num_ack_pending == 0:
                break
            await asyncio.sleep(0.1)
        return stream, consumer
    finally:
        await nc.close()


def test_a_paced_producer_keeps_to_its_share_of_the_rate(peer: Peer) -> None:
    # Two producers share 2000 records/s: each sends 500 at 1000/s, so none finishes before
    # its last record is due (a lower bound only; the machine may be slower, never faster).
    workload = Workload(name="paced", partitions=1, producers=2, rate_per_s=2000.0)
    topic = "paced"
    peer.system.create_stream(peer.endpoint, topic, workload)
    stats = peer.driver().produce(peer.endpoint, topic, workload, 1, 500, Recorder())
    assert stats.records == 500
    assert stats.seconds >= 499 / 1000.0


def test_consumers_sharing_a_paced_stream_each_get_their_share(peer: Peer) -> None:
    # Records trickle in, so fetches and reads often come back empty or short, and one consumer
    # finishes its share while the other still reads: nothing may be lost between them.
    workload = Workload(
        name="paced-shared", partitions=2, producers=1, consumers=2, rate_per_s=1500.0
    )
    topic = "paced-shared"
    peer.system.create_stream(peer.endpoint, topic, workload)
    driver = peer.driver()
    with ThreadPoolExecutor(3) as pool:
        reading = [
            pool.submit(driver.consume, peer.endpoint, topic, workload, w, 1500, Recorder())
            for w in range(2)
        ]
        sent = driver.produce(peer.endpoint, topic, workload, 0, 3000, Recorder())
        consumed = [f.result(timeout=120) for f in reading]
    assert sent.records == 3000
    assert [c.records for c in consumed] == [1500, 1500]
    _check_server_side(peer, topic, workload.partitions, 3000)


def test_a_duration_stops_producers_and_consumers_drain(peer: Peer) -> None:
    workload = Workload(
        name="timed", partitions=2, message_count=10_000_000, duration_s=0.5, rate_per_s=2000.0
    )
    topic = "timed"
    peer.system.create_stream(peer.endpoint, topic, workload)
    (produced,), (consumed,), _, _ = _run_workers(peer, topic, workload, workload.message_count)
    assert 0 < produced.records < workload.message_count
    assert consumed.records == produced.records


def test_stop_ends_the_server_and_a_restart_starts_empty(peer: Peer, tmp_path: Path) -> None:
    workload = Workload(name="restart")
    system = peer.module.System()
    endpoint = system.start(tmp_path, workload)
    (pid,) = system.server_pids()
    assert endpoint.address != peer.endpoint.address
    system.create_stream(endpoint, "left-over", workload)
    peer.driver().produce(endpoint, "left-over", workload, 0, 10, Recorder())
    assert _stored(peer.name, endpoint, "left-over") == 10
    system.stop()
    assert system.server_pids() == []
    assert not psutil.pid_exists(pid)
    system.stop()  # idempotent

    # The same workdir again: the servers would load what the last run stored there.
    endpoint = system.start(tmp_path, workload)
    try:
        assert _stored(peer.name, endpoint, "left-over") == 0
    finally:
        system.stop()


def _stored(name: str, endpoint: Endpoint, topic: str) -> int:
    """Records the server holds for ``topic`` (0 if the topic does not exist)."""
    if name == "redis-streams":
        client = redis.Redis.from_url(f"redis://{endpoint.address}")
        try:
            return sum(client.xlen(s) for s in redis_streams.stream_names(topic, 1))
        finally:
            client.close()
    try:
        stream, _ = asyncio.run(_jetstream_state(endpoint.address, topic))
    except nats.js.errors.NotFoundError:
        return 0
    messages: int = stream.state.messages
    return messages


def test_rendered_nats_configs_are_accepted_by_nats_server(tmp_path: Path) -> None:
    binary = nats_server.JetStreamSystem().installed_binary()
    route = nats_server.ClusterRoute("bench-c", 6300, (6301, 6302))
    for config in (
        nats_server.render_config("solo", 4300, tmp_path / "solo"),
        nats_server.render_config("bench-c-0", 4301, tmp_path / "node 0", route),
    ):
        path = tmp_path / "nats.conf"
        path.write_text(config)
        checked = subprocess.run(
            [binary, "-c", str(path), "-t"], capture_output=True, text=True, timeout=30
        )
        assert checked.returncode == 0, checked.stderr + checked.stdout


def test_jetstream_with_three_replicas_runs_a_three_node_cluster(tmp_path: Path) -> None:
    workload = Workload(name="rf3", partitions=2, replication_factor=3, message_count=2000)
    system = nats_jetstream.System()
    endpoint = system.start(tmp_path, workload)
    try:
        assert len(system.server_pids()) == 3
        assert len(nats_server.server_urls(endpoint.address)) == 3
        system.create_stream(endpoint, "rf3", workload)
        peer = Peer("nats-jetstream", nats_jetstream, system, endpoint, tmp_path)
        (produced,), (consumed,), _, _ = _run_workers(peer, "rf3", workload, 2000)
        assert produced.records == consumed.records == 2000
        stream, consumer = asyncio.run(_jetstream_state(endpoint.address, "rf3"))
        assert stream.config.num_replicas == 3
        assert stream.cluster is not None and len(stream.cluster.replicas or []) == 2
        assert stream.state.messages == 2000
        assert (consumer.num_pending, consumer.num_ack_pending) == (0, 0)
    finally:
        system.stop()
    assert system.server_pids() == []


def test_jetstream_refuses_a_topic_that_is_no_stream_name() -> None:
    system = nats_jetstream.System()
    endpoint = Endpoint(system="nats-jetstream", address="nats://127.0.0.1:1")
    with pytest.raises(ConfigError, match="stream name"):
        system.create_stream(endpoint, "a.b", Workload(name="bad"))
