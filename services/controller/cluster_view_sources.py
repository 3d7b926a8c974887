"""Where the cluster view's numbers come from: log offsets from the brokers, groups from ZooKeeper.

Log start and end offsets come from each partition's leader: one ListOffsets request per broker
and offset kind, bounded by a timeout, so a dead or stalled broker costs only its own
partitions' offsets for the round. The high watermark is the log end reported, as
kafka_exporter reports what a consumer can read.

Group coordinators keep members and committed offsets under ``/consumers/{group}``
(``ids/{member}`` and ``offsets/{topic}/{partition}``), so the controller reads them without
asking any broker. The reads run in a kazoo thread in three pipelined stages (groups'
children, topics' children, offset payloads), so many groups cost three round trips' latency,
not one per node; a node deleted between listing and reading is simply left out.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.client.cluster import ClusterClient
from pafka.client.connection import BrokerConnection
from pafka.errors import CorruptZNodeError, PafkaError
from pafka.groups.zk_coordinated import partition_number
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from pafka.zk.znodes import CONSUMERS, CommittedOffsetZNode, Z

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

LIST_OFFSETS_VERSION = 5
EARLIEST = -2
LATEST = -1


@dataclass(frozen=True)
class GroupOffsets:
    name: str
    members: int
    committed: Mapping[TopicPartition, int] = field(default_factory=dict)


def _result(pending: Any, default: Any) -> Any:
    try:
        return pending.get()
    except NoNodeError:
        return default


def read_groups(zk: KazooClient) -> tuple[GroupOffsets, ...]:
    """Every group under ``/consumers`` with its member count and committed offsets."""
    groups = sorted(_result(zk.get_children_async(CONSUMERS), []))
    ids = {g: zk.get_children_async(Z.ids_path(g)) for g in groups}
    topics = {g: zk.get_children_async(Z.offsets_path(g)) for g in groups}
    members = {g: len(_result(ids[g], [])) for g in groups}
    partitions = {
        (g, t): zk.get_children_async(Z.offsets_topic_path(g, t))
        for g in groups
        for t in _result(topics[g], [])
    }
    numbers = {
        (g, t): [n for n in map(partition_number, _result(pending, [])) if n is not None]
        for (g, t), pending in partitions.items()
    }
    payloads = {
        (g, t, p): zk.get_async(Z.offset_path(g, t, p))
        for (g, t), ps in numbers.items()
        for p in ps
    }
    committed: dict[str, dict[TopicPartition, int]] = {g: {} for g in groups}
    for (g, t, p), pending in payloads.items():
        found = _result(pending, None)
        if found is None:
            continue
        path = Z.offset_path(g, t, p)
        try:
            # The offset alone: offset_commits/ holds nothing the cluster view shows.
            committed[g][(t, p)] = CommittedOffsetZNode.decode(path, bytes(found[0] or b"")).offset
        except CorruptZNodeError as exc:
            # One unreadable node must not hide every other group's offsets.
            log.warning("cluster view: skipping %s: %s", path, exc)
    # Read-only views: a snapshot is shared with scrapes and never changed after it is made.
    return tuple(GroupOffsets(g, members[g], MappingProxyType(committed[g])) for g in groups)


# -- log offsets from the leaders ----------------------------------------------------------------


async def log_offsets(
    client: ClusterClient, led: Mapping[int, Mapping[TopicPartition, int]], timeout_s: float
) -> dict[TopicPartition, tuple[int, int]]:
    """(log start, log end) of each partition whose leader answered both lookups; ``led`` maps
    each leader's broker id to its partitions and their leader epochs."""
    answers = await asyncio.gather(
        *(_broker_offsets(client, b, epochs, timeout_s) for b, epochs in sorted(led.items()))
    )
    return {tp: found for answer in answers for tp, found in answer.items()}


async def _broker_offsets(
    client: ClusterClient, broker_id: int, epochs: Mapping[TopicPartition, int], timeout_s: float
) -> dict[TopicPartition, tuple[int, int]]:
    try:
        # The connection's own timeout, not a cancellation: it closes a connection that did not
        # answer, so the next round does not queue behind the unanswered requests.
        async with asyncio.timeout(timeout_s):
            connection = await client.connection(broker_id)
        starts, ends = await asyncio.gather(
            _list_offsets(connection, epochs, EARLIEST, timeout_s),
            _list_offsets(connection, epochs, LATEST, timeout_s),
        )
    except (PafkaError, TimeoutError) as exc:
        log.info("cluster view: no offsets from broker %d this round: %s", broker_id, exc)
        return {}
    return {tp: (starts[tp], ends[tp]) for tp in starts.keys() & ends.keys()}


async def _list_offsets(
    connection: BrokerConnection, epochs: Mapping[TopicPartition, int], which: int, timeout_s: float
) -> dict[TopicPartition, int]:
    cls = request_class(ApiKey.LIST_OFFSETS)[LIST_OFFSETS_VERSION]
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for (topic, partition), epoch in sorted(epochs.items()):
        by_topic[topic].append(
            cls.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=partition, current_leader_epoch=epoch, timestamp=which
            )
        )
    body = cls(
        replica_id=-1,
        isolation_level=0,
        topics=[cls.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )
    response = await connection.call(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body, timeout_s)
    # A partition this broker no longer leads (or not yet at this epoch) answers an error: its
    # series wait for the next round.
    return {
        (t.name, p.partition_index): int(p.offset)
        for t in response.topics
        for p in t.partitions
        if p.error_code == 0
    }
