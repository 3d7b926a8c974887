"""The parts of ``/consumers/{group}`` shared with ZooKeeper-era clients (blocking; run in
threads): committed offsets, which those clients and tools read and write themselves, and the
registrations of consumers that coordinate through ZooKeeper. Reads are pipelined.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.zk_coordinated import ZkConsumers, partition_number
from pafka.zk.znodes import (
    CommittedOffsetZNode,
    ConsumerGroupZNodes,
    PartitionOwnerZNode,
    ZkConsumerRegistration,
    decode_registration,
)

Z = ConsumerGroupZNodes


def children(zk: KazooClient, path: str) -> list[str]:
    try:
        return sorted(zk.get_children(path))
    except NoNodeError:
        return []


def read_all(zk: KazooClient, paths: Iterable[str]) -> dict[str, bytes]:
    """Read many znodes with one round trip's latency (kazoo pipelines async requests)."""
    pending = {path: zk.get_async(path) for path in paths}
    found: dict[str, bytes] = {}
    for path, result in pending.items():
        try:
            found[path] = bytes(result.get()[0] or b"")  # a node created without data reads None
        except NoNodeError:
            continue  # deleted between listing and reading
    return found


def partition_paths(
    zk: KazooClient, root: str, *, broker_prefixed: bool = False
) -> dict[TopicPartition, str]:
    """``{root}/{topic}/{partition}`` nodes by partition (see :func:`partition_number`)."""
    paths: dict[TopicPartition, str] = {}
    for topic in children(zk, root):
        for name in children(zk, f"{root}/{topic}"):
            # Anything else under a topic is not a partition; left alone, not fatal.
            p = partition_number(name, broker_prefixed=broker_prefixed)
            if p is not None:
                paths[(topic, p)] = f"{root}/{topic}/{name}"
    return paths


@dataclass
class StoredOffsets:
    offsets: dict[TopicPartition, CommittedOffsetZNode]
    # Partitions whose offset_commits/ node exists.
    commit_nodes: set[TopicPartition]
    # Offset nodes still in the JSON of older pafka versions (rewritten bare once claimed).
    json_format: set[TopicPartition]


def read_offsets(
    zk: KazooClient, group: str, partitions: Iterable[TopicPartition] | None = None
) -> StoredOffsets:
    """Committed offsets (of ``partitions``, or all)."""
    if partitions is None:
        offset_paths = partition_paths(zk, Z.offsets_path(group))
        commit_paths = partition_paths(zk, Z.commits_path(group))
    else:
        wanted = sorted(set(partitions))
        offset_paths = {tp: Z.offset_path(group, *tp) for tp in wanted}
        commit_paths = {tp: Z.commit_path(group, *tp) for tp in wanted}
    raw = read_all(zk, [*offset_paths.values(), *commit_paths.values()])
    found = StoredOffsets({}, {tp for tp, path in commit_paths.items() if path in raw}, set())
    for tp, path in offset_paths.items():
        if path in raw:
            commit_path = commit_paths.get(tp, "")
            found.offsets[tp] = CommittedOffsetZNode.decode(
                path, raw[path], commit_path, raw.get(commit_path)
            )
            if raw[path].lstrip().startswith(b"{"):
                found.json_format.add(tp)
    return found


def write_offsets_unfenced(
    zk: KazooClient, group: str, offsets: dict[TopicPartition, CommittedOffsetZNode]
) -> None:
    """OffsetCommit v0 as Kafka 2.x serves it on any broker: straight into ZooKeeper, no
    coordinator involved (Kafka 0.8.1 clients send it to whichever broker they like)."""
    for tp, node in sorted(offsets.items()):
        for path, data in (
            (Z.offset_path(group, *tp), node.encode()),
            (Z.commit_path(group, *tp), node.encode_commit()),
        ):
            try:
                zk.set(path, data)
            except NoNodeError:
                try:
                    zk.create(path, data, makepath=True)
                except NodeExistsError:
                    zk.set(path, data)


def zk_consumers(zk: KazooClient, group: str) -> ZkConsumers:
    """The group's ZooKeeper-coordinated clients as they are now (their nodes are ephemeral,
    so a snapshot taken when the group was loaded goes stale)."""
    member_paths = {m: Z.member_path(group, m) for m in children(zk, Z.ids_path(group))}
    raw = read_all(zk, member_paths.values())
    members: dict[str, ZkConsumerRegistration] = {}
    for member, path in member_paths.items():
        if path in raw:
            found = decode_registration(group, member, raw[path])
            if isinstance(found, ZkConsumerRegistration):
                members[member] = found
    if not members:
        return ZkConsumers({}, {})
    owner_paths = partition_paths(zk, Z.owners_path(group), broker_prefixed=True)
    raw = read_all(zk, owner_paths.values())
    owners: dict[TopicPartition, str] = {}
    for tp, path in owner_paths.items():
        if path in raw:
            owner = PartitionOwnerZNode.decode(path, raw[path])
            if owner.zk_consumer:
                owners[tp] = owner.member_id
    return ZkConsumers(members, owners)
