"""The NATS JetStream server side of the comparison benchmark: nats-server processes and streams.

One nats-server for RF 1 workloads; for RF > 1 a JetStream cluster of one node per replica on
loopback, each a child process with its own client and cluster ports and its store under the
run's workdir. A topic of N partitions is one file-storage stream named after the topic with
subjects ``{topic}.{p}``, and one durable pull consumer ``bench`` (explicit acks) that every
consumer worker shares. The client loops are in :mod:`bench.compare.nats_jetstream`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import secrets
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
from nats.js import api

from bench.compare.driver import Endpoint, Workload
from bench.compare.peer_server import PeerSystem
from pafka.errors import ConfigError, PafkaError

NAME = "nats-jetstream"
DURABLE = "bench"
# Unacknowledged messages the server hands out before it waits for acks: the fetch batches of
# every worker, with room to spare.
MAX_ACK_PENDING = 1_000_000
# Messages delivered to a worker that stopped before reading them go to another worker after
# this; every worker acknowledges what it reads at once, so no live worker is this slow.
ACK_WAIT_S = 10.0
MAX_FILE_STORE_BYTES = 64 * 1024**3
MAX_MEMORY_STORE_BYTES = 256 * 1024**2

DURABILITY = (
    "RF 1 workloads: one nats-server, so acks=all is acks=1; RF 3 workloads: a 3-node JetStream "
    "cluster on loopback, stream replicas 3, a publish acknowledged once a majority (2 of 3) "
    "stored it, whatever the workload's acks (JetStream has no leader-only ack). File storage: "
    "a node acknowledges once the message is written to the stream's block file (OS page "
    "cache); nats-server 2.9 has no sync option (sync_interval came in 2.10) and fsyncs blocks "
    "on its fixed background timer (60 s in 2.9's file store). pafka, for comparison: an "
    "acknowledged write is in the page cache of the leader's log (acks=1) or of every in-sync "
    "replica's (acks=all), fsynced by the broker's checkpoint every 5 s."
)
# A cluster larger than this on one loopback host measures the host, not NATS.
MAX_NODES = 5
CLUSTER_READY_TIMEOUT_S = 60.0
# JetStream's error code for a replicated stream the cluster cannot place (yet).
NO_SUITABLE_PEERS = 10005

T = TypeVar("T")

# JetStream stream names may not hold '.', '*', '>', path separators or whitespace.
_STREAM_NAME = re.compile(r"^[A-Za-z0-9_-]{1,200}$")


def run_loop(coroutine: Coroutine[Any, Any, T]) -> T:
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


@dataclass(frozen=True)
class ClusterRoute:
    """One node's place in a JetStream cluster on loopback."""

    cluster_name: str
    cluster_port: int
    # The other nodes' cluster ports.
    peer_ports: tuple[int, ...]


def render_config(
    server_name: str, port: int, store_dir: Path, cluster: ClusterRoute | None = None
) -> str:
    """nats-server config for a private, loopback-only JetStream server or cluster node."""
    lines = [
        f"server_name: {json.dumps(server_name)}",
        'host: "127.0.0.1"',
        f"port: {port}",
        "jetstream {",
        f"  store_dir: {json.dumps(str(store_dir))}",
        f"  max_memory_store: {MAX_MEMORY_STORE_BYTES}",
        f"  max_file_store: {MAX_FILE_STORE_BYTES}",
        "}",
    ]
    if cluster is not None:
        routes = ", ".join(json.dumps(f"nats-route://127.0.0.1:{p}") for p in cluster.peer_ports)
        lines += [
            "cluster {",
            f"  name: {json.dumps(cluster.cluster_name)}",
            '  host: "127.0.0.1"',
            f"  port: {cluster.cluster_port}",
            f"  routes: [{routes}]",
            "}",
        ]
    return "\n".join([*lines, ""])


def node_count(replication_factor: int) -> int:
    """Servers to run for a workload: one per replica."""
    if not 1 <= replication_factor <= MAX_NODES:
        raise ConfigError(
            f"{NAME}: replication factor must be 1..{MAX_NODES}, got {replication_factor}"
        )
    return replication_factor


def server_urls(address: str) -> list[str]:
    """An endpoint address is the nodes' client URLs, comma-separated."""
    urls = [u for u in address.split(",") if u]
    if not urls or not all(u.startswith("nats://") for u in urls):
        raise ConfigError(f"{NAME}: address must be nats:// URLs, comma-separated: {address!r}")
    return urls


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


def _answers_as(address: str, server_name: str, _pid: int = 0) -> bool:
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

    def __init__(self) -> None:
        super().__init__()
        self._nodes = 0

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        nodes = node_count(workload.replication_factor)
        data_dir, ports = self._prepare(workdir / "nats", ports=2 * nodes if nodes > 1 else 1)
        client_ports, cluster_ports = ports[:nodes], ports[nodes:]
        # Fresh names per start prove the servers answering are these children, not a packaged
        # instance.
        name = f"pafka-bench-{secrets.token_hex(4)}"
        for node, port in enumerate(client_ports):
            server_name = f"{name}-{node}"
            route = None
            if nodes > 1:
                peers = tuple(p for i, p in enumerate(cluster_ports) if i != node)
                route = ClusterRoute(name, cluster_ports[node], peers)
            config = data_dir / f"nats-{node}.conf"
            store = data_dir / "jetstream" / str(node)
            config.write_text(render_config(server_name, port, store, route))
            url = f"nats://127.0.0.1:{port}"
            self._launch(
                ["-c", str(config)],
                data_dir / f"nats-{node}.log",
                functools.partial(_answers_as, url, server_name),
            )
        address = ",".join(f"nats://127.0.0.1:{p}" for p in client_ports)
        self._nodes = nodes
        if nodes > 1:
            try:
                run_loop(_wait_for_jetstream(address, CLUSTER_READY_TIMEOUT_S))
            except BaseException:
                self.stop()
                raise
        return Endpoint(system=NAME, address=address, extra={"durable": DURABLE})

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        replicas = workload.replication_factor
        if replicas > max(1, self._nodes):
            raise ConfigError(
                f"{NAME}: {replicas} replicas asked of a run started with {self._nodes} node(s)"
            )
        run_loop(_create_stream(endpoint.address, topic, workload.partitions, replicas))


async def _wait_for_jetstream(address: str, timeout_s: float) -> None:
    """Until the cluster has elected its JetStream meta leader and answers account requests."""
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            nc = await nats.connect(server_urls(address), allow_reconnect=False)
        except (nats.errors.Error, OSError) as exc:
            last_error = exc
            await asyncio.sleep(0.2)
            continue
        try:
            info = await nc.jetstream(timeout=2.0).account_info()
            if info is not None:
                return
        except (TimeoutError, nats.errors.Error) as exc:
            last_error = exc
        finally:
            await nc.close()
        await asyncio.sleep(0.2)
    raise PafkaError(
        f"{NAME}: the cluster at {address} had no JetStream within {timeout_s}s "
        f"(last: {last_error!r})"
    )


async def _create_stream(address: str, topic: str, partitions: int, replicas: int) -> None:
    subject_names(topic, partitions)  # validates
    nc = await nats.connect(server_urls(address), allow_reconnect=False)
    try:
        js = nc.jetstream()
        stream = api.StreamConfig(
            name=topic,
            subjects=[f"{topic}.*"],
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            num_replicas=replicas,
        )
        # A cluster answers before every node has joined its meta group; until then placing a
        # replicated stream fails with "no suitable peers". Adding the same stream again is a
        # no-op, so a retry after a timeout that did create it is harmless.
        deadline = time.monotonic() + CLUSTER_READY_TIMEOUT_S
        while True:
            try:
                await js.add_stream(stream)
                break
            except (TimeoutError, nats.js.errors.ServiceUnavailableError) as exc:
                error: Exception = exc
            except nats.js.errors.APIError as exc:
                if exc.err_code != NO_SUITABLE_PEERS:
                    raise
                error = exc
            if time.monotonic() > deadline:
                raise PafkaError(f"{NAME}: could not create stream {topic}: {error}") from error
            await asyncio.sleep(0.2)
        await js.add_consumer(
            topic,
            api.ConsumerConfig(
                durable_name=DURABLE,
                deliver_policy=api.DeliverPolicy.ALL,
                # Explicit acks, not AckAll: with workers sharing the consumer, one worker's
                # AckAll would also acknowledge messages delivered to another worker that never
                # counted them (a worker that stopped at its share), and they would be lost.
                ack_policy=api.AckPolicy.EXPLICIT,
                ack_wait=ACK_WAIT_S,
                max_ack_pending=MAX_ACK_PENDING,
            ),
        )
    finally:
        await nc.close()
