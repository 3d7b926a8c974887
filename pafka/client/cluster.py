"""A client's view of the cluster: which brokers exist, who leads what, one connection each.

Brokers are discovered the seeds' way, by watching ``/brokers/ids`` in ZooKeeper (a broker
joining or leaving changes routing at once), or from a bootstrap list through Metadata.
Leadership comes from Metadata responses and is refreshed whenever a broker says it is not the
leader, so callers only ever ask "who leads this partition now".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pafka.client.connection import BrokerConnection
from pafka.errors import (
    BrokerConnectionError,
    BrokerUnreachableError,
    LeaderNotAvailableError,
    PafkaError,
    UnknownTopicOrPartitionError,
    for_code,
)
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity
from pafka.zk.client import ZkClient
from pafka.zk.znodes import BROKER_IDS, BrokerInfo

log = logging.getLogger(__name__)

METADATA_VERSION = 9
MAX_SPARE_CONNECTIONS = 8


@dataclass(frozen=True)
class PartitionLeader:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass
class TopicInfo:
    name: str
    partitions: dict[int, PartitionLeader] = field(default_factory=dict)


class ClusterClient:
    def __init__(
        self,
        *,
        bootstrap: Iterable[tuple[str, int]] = (),
        zk: ZkClient | None = None,
        client_id: str = "pafka-client",
        network: NetworkDeadlines = DEFAULT_DEADLINES,
        security: ClientSecurity = PLAINTEXT_CLIENT,
    ) -> None:
        self.client_id = client_id
        # How connections are secured, and which registered listener they use.
        self.security = security
        # Connect and call deadlines of every connection to a broker.
        self.network = network
        self.zk = zk
        self.brokers: dict[int, tuple[str, int]] = {}
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.topics: dict[str, TopicInfo] = {}
        self._bootstrap = list(bootstrap)
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._connecting: dict[tuple[str, int], asyncio.Lock] = {}
        # Idle connections lent out one request at a time (see exclusive()).
        self._spare: dict[tuple[str, int], list[BrokerConnection]] = {}
        self._refresh_lock = asyncio.Lock()

    async def start(self, timeout_s: float = 30.0) -> None:
        """Begin watching brokers and load metadata, retrying until a broker answers:
        services start in any order."""
        if self.zk is not None:
            self.zk.watch_children(BROKER_IDS, self._on_brokers)
        last: PafkaError = BrokerConnectionError(f"no broker answered within {timeout_s:g}s")
        try:
            # One deadline for all attempts: a broker that accepts and never answers would
            # otherwise hold a single attempt for a whole call deadline.
            async with asyncio.timeout(timeout_s):
                while True:
                    try:
                        await self.refresh()
                        return
                    except PafkaError as exc:
                        last = exc
                        log.info("waiting for brokers: %s", exc)
                        await asyncio.sleep(0.5)
        except TimeoutError:
            raise last from None

    async def close(self) -> None:
        for connection in list(self._connections.values()):
            await connection.close()
        for spares in self._spare.values():
            for connection in spares:
                await connection.close()
        self._connections.clear()
        self._spare.clear()

    async def _on_brokers(self, children: list[str]) -> None:
        assert self.zk is not None
        found: dict[int, tuple[str, int]] = {}
        for child in children:
            if not child.isdigit():
                continue
            got = await self.zk.get(BrokerInfo.path(int(child)))
            if got is not None:
                info = BrokerInfo.decode(int(child), got[0])
                endpoint = self.security.endpoint(info.listeners)
                if endpoint is not None:
                    found[info.id] = (endpoint.host, endpoint.port)
        self.brokers = found

    # -- connections -------------------------------------------------------------------------

    async def connection(self, broker_id: int) -> BrokerConnection:
        address = self.brokers.get(broker_id)
        if address is None:
            raise BrokerUnreachableError(f"broker {broker_id} is not registered")
        return await self._connect(address)

    async def _connect(self, address: tuple[str, int]) -> BrokerConnection:
        existing = self._connections.get(address)
        if existing is not None and existing.alive:
            return existing
        lock = self._connecting.setdefault(address, asyncio.Lock())
        async with lock:
            existing = self._connections.get(address)
            if existing is not None and existing.alive:
                return existing
            connection = self._new_connection(address)
            await connection.open()
            self._connections[address] = connection
            return connection

    def _new_connection(self, address: tuple[str, int]) -> BrokerConnection:
        return BrokerConnection(
            *address, client_id=self.client_id, network=self.network, security=self.security
        )

    @asynccontextmanager
    async def exclusive(self, broker_id: int) -> AsyncIterator[BrokerConnection]:
        """A connection of the caller's own for a request the broker may hold (JoinGroup,
        SyncGroup, a long-poll Fetch): a broker answers each connection in order, so such a
        request on the shared connection would hold up every request behind it. For the same
        reason one given back with a request still unanswered (its caller stopped waiting on a
        held Fetch: a follow read whose client left) is closed, not kept for the next caller."""
        address = self.brokers.get(broker_id)
        if address is None:
            raise BrokerUnreachableError(f"broker {broker_id} is not registered")
        spares = self._spare.setdefault(address, [])
        connection = None
        while spares and connection is None:
            candidate = spares.pop()
            connection = candidate if candidate.alive else None
        if connection is None:
            connection = self._new_connection(address)
            await connection.open()
        try:
            yield connection
        finally:
            if connection.alive and connection.idle and len(spares) < MAX_SPARE_CONNECTIONS:
                spares.append(connection)
            else:
                await connection.close()

    def _addresses(self) -> list[tuple[str, int]]:
        known = list(self.brokers.values())
        return known + [a for a in self._bootstrap if a not in known]

    async def call_any(self, api: ApiKey, version: int, body: Any) -> Any:
        """Send to any reachable broker (metadata, admin requests)."""
        last: PafkaError | None = None
        for address in self._addresses():
            try:
                return await (await self._connect(address)).call(api, version, body)
            except BrokerConnectionError as exc:
                last = exc
        raise last or BrokerConnectionError("no broker is known")

    async def call(
        self, broker_id: int, api: ApiKey, version: int, body: Any, *, raw: bool = False
    ) -> Any:
        """The decoded answer, or with ``raw`` its frame (see :meth:`BrokerConnection.call`)."""
        return await (await self.connection(broker_id)).call(api, version, body, raw=raw)

    # -- metadata ----------------------------------------------------------------------------

    async def refresh(self, topics: Iterable[str] | None = None) -> None:
        """Reload metadata (all topics when ``topics`` is None)."""
        async with self._refresh_lock:
            cls = request_class(ApiKey.METADATA)[METADATA_VERSION]
            wanted = None if topics is None else [cls.MetadataRequestTopic(name=t) for t in topics]
            response = await self.call_any(
                ApiKey.METADATA,
                METADATA_VERSION,
                cls(topics=wanted, allow_auto_topic_creation=False),
            )
            if self.zk is None or not self.brokers:
                self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
            self.cluster_id = response.cluster_id
            self.controller_id = response.controller_id
            if topics is None:
                self.topics = {}
            for t in response.topics:
                if t.error_code == UnknownTopicOrPartitionError.code:
                    self.topics.pop(t.name, None)
                    continue
                info = TopicInfo(t.name)
                for p in t.partitions:
                    info.partitions[p.partition_index] = PartitionLeader(
                        leader=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replica_nodes),
                        isr=tuple(p.isr_nodes),
                    )
                self.topics[t.name] = info

    def forget(self, topic: str) -> None:
        """Drop what is known of ``topic`` so the next lookup asks a broker again (after a
        broker said it is not the leader, or could not be reached)."""
        self.topics.pop(topic, None)

    async def topic(self, name: str, *, refresh: bool = False) -> TopicInfo:
        if refresh or name not in self.topics:
            await self.refresh([name])
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        return info

    async def leader(self, topic: str, partition: int, *, refresh: bool = False) -> int:
        info = await self.topic(topic, refresh=refresh)
        found = info.partitions.get(partition)
        if found is None:
            raise UnknownTopicOrPartitionError(f"{topic} has no partition {partition}")
        if found.leader < 0:
            raise LeaderNotAvailableError(f"{topic}-{partition} has no leader")
        return found.leader

    async def coordinator(self, group: str) -> int:
        cls = request_class(ApiKey.FIND_COORDINATOR)[3]
        response = await self.call_any(ApiKey.FIND_COORDINATOR, 3, cls(key=group, key_type=0))
        if response.error_code:
            raise for_code(response.error_code, response.error_message or "")
        self.brokers.setdefault(response.node_id, (response.host, response.port))
        return int(response.node_id)
