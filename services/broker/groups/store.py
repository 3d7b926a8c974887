"""A group coordinator's reads and writes of ``/consumers/{group}`` (blocking; run in threads).

Claiming a group bumps the version of ``/consumers/{group}/coordinator``; every later write is a
ZooKeeper transaction whose first operation checks that version. A broker that lost the group
to another (its session expired, it was paused) therefore cannot change anything: its
transaction fails whole with a bad version, and it drops the group.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NotEmptyError

from pafka.errors import (
    CoordinationError,
    CorruptZNodeError,
    NonEmptyGroupError,
    NotCoordinatorError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.zk_coordinated import ZkConsumers
from pafka.zk.client import check_transaction
from pafka.zk.znodes import (
    BROKER_IDS,
    CONSUMERS,
    CommittedOffsetZNode,
    ConsumerGroupZNodes,
    GroupCoordinatorZNode,
    GroupMemberZNode,
    GroupZNode,
    PartitionOwnerZNode,
    ZkConsumerRegistration,
    decode_registration,
)
from services.broker import claims
from services.broker.groups import shared_registry
from services.broker.groups.shared_registry import children, partition_paths, read_all

Z = ConsumerGroupZNodes
UNCLAIMED = claims.UNCLAIMED


@dataclass
class GroupSnapshot:
    """Everything ZooKeeper holds about a group, as read right after claiming it."""

    group: GroupZNode = field(default_factory=GroupZNode)
    members: dict[str, GroupMemberZNode] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    offsets: dict[TopicPartition, CommittedOffsetZNode] = field(default_factory=dict)
    # Partitions whose offset_commits/ node exists (offsets migrated from JSON have none yet).
    commit_nodes: set[TopicPartition] = field(default_factory=set)
    json_offsets: set[TopicPartition] = field(default_factory=set)
    zk_consumers: ZkConsumers = field(default_factory=lambda: ZkConsumers({}, {}))


@dataclass(frozen=True)
class Claim:
    """This broker's hold on a group: the coordinator znode version its writes check."""

    group: str
    version: int
    epoch: int
    # The claim this one replaced (None for a new group), to judge when members last had a
    # coordinator to talk to.
    previous: GroupCoordinatorZNode | None = None


def holder(zk: KazooClient, group: str) -> int | None:
    """The broker whose claim on ``group`` is live (it is registered), else None. A malformed
    claim reads as none: FindCoordinator still answers; claiming reports the node."""
    return claims.live_holder(zk, GroupCoordinatorZNode, group)


def group_exists(zk: KazooClient, group: str) -> bool:
    return zk.exists(Z.group_path(group)) is not None


def claim(zk: KazooClient, group: str, broker_id: int) -> Claim:
    """Take ``group`` over unless another live broker holds it (NotCoordinatorError)."""
    for path in (Z.ids_path(group), Z.owners_path(group), Z.offsets_path(group)):
        zk.ensure_path(path)
    if not zk.get(Z.group_path(group))[0]:
        zk.set(Z.group_path(group), GroupZNode().encode())
    version, epoch, previous = claims.take(
        zk, GroupCoordinatorZNode, group, broker_id, f"group {group!r}"
    )
    return Claim(group, version, epoch, previous)


def load(zk: KazooClient, group: str) -> GroupSnapshot:
    """The whole group; CorruptZNodeError naming the first node that does not decode."""
    data, _ = zk.get(Z.group_path(group))
    snapshot = GroupSnapshot(group=GroupZNode.decode(group, data or b""))
    member_paths = {m: Z.member_path(group, m) for m in children(zk, Z.ids_path(group))}
    owner_paths = partition_paths(zk, Z.owners_path(group), broker_prefixed=True)
    raw = read_all(zk, [*member_paths.values(), *owner_paths.values()])
    zk_members: dict[str, ZkConsumerRegistration] = {}
    for member, path in member_paths.items():
        if path in raw:
            found = decode_registration(group, member, raw[path])
            if isinstance(found, ZkConsumerRegistration):
                zk_members[member] = found
            else:
                snapshot.members[member] = found
    zk_owners: dict[TopicPartition, str] = {}
    for tp, path in owner_paths.items():
        if path in raw:
            owner = PartitionOwnerZNode.decode(path, raw[path])
            # A partition a ZooKeeper-coordinated client owns is not the coordinator's to
            # release: keeping it out of the owners map keeps the broker's hands off it.
            if owner.zk_consumer:
                zk_owners[tp] = owner.member_id
            elif path != Z.owner_path(group, *tp):
                # Ours are named by the partition alone; this one we could never rewrite.
                raise CorruptZNodeError(path, "a coordinator's owner node not named {partition}")
            else:
                snapshot.owners[tp] = owner.member_id
    stored = shared_registry.read_offsets(zk, group)
    snapshot.offsets, snapshot.commit_nodes = stored.offsets, stored.commit_nodes
    snapshot.json_offsets = stored.json_format
    snapshot.zk_consumers = ZkConsumers(zk_members, zk_owners)
    return snapshot


class GroupWrite:
    """The znode changes of one coordinator decision, applied atomically and fenced.

    The caller says whether each node exists (it mirrors ZooKeeper in memory); parents of
    per-topic nodes are created beforehand, outside the transaction: an empty parent is harmless.
    """

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self.parents: set[str] = set()
        self.members_put: set[str] = set()
        self.members_deleted: set[str] = set()
        self.commits_put: set[TopicPartition] = set()
        self._ops: list[tuple[str, str, bytes]] = []

    def __bool__(self) -> bool:
        return bool(self._ops)

    def _put(self, path: str, data: bytes, exists: bool) -> None:
        self._ops.append(("set" if exists else "create", path, data))

    def set_group(self, node: GroupZNode) -> None:
        self._put(Z.group_path(self.claim.group), node.encode(), True)

    def put_member(self, member_id: str, node: GroupMemberZNode, exists: bool) -> None:
        self.members_put.add(member_id)
        self._put(Z.member_path(self.claim.group, member_id), node.encode(), exists)

    def delete_member(self, member_id: str) -> None:
        self.members_deleted.add(member_id)
        self._ops.append(("delete", Z.member_path(self.claim.group, member_id), b""))

    def put_owner(self, tp: TopicPartition, node: PartitionOwnerZNode, exists: bool) -> None:
        self.parents.add(Z.owners_topic_path(self.claim.group, tp[0]))
        self._put(Z.owner_path(self.claim.group, *tp), node.encode(), exists)

    def delete_owner(self, tp: TopicPartition) -> None:
        self._ops.append(("delete", Z.owner_path(self.claim.group, *tp), b""))

    def put_offset(
        self, tp: TopicPartition, node: CommittedOffsetZNode, exists: bool, commit_exists: bool
    ) -> None:
        """The bare offset where ZooKeeper-era readers look, the rest of the commit beside it."""
        group = self.claim.group
        self.parents.add(Z.offsets_topic_path(group, tp[0]))
        self.parents.add(Z.commits_topic_path(group, tp[0]))
        self._put(Z.offset_path(group, *tp), node.encode(), exists)
        self._put(Z.commit_path(group, *tp), node.encode_commit(), commit_exists)
        self.commits_put.add(tp)

    def delete_offset(self, tp: TopicPartition, commit_exists: bool) -> None:
        self._ops.append(("delete", Z.offset_path(self.claim.group, *tp), b""))
        if commit_exists:
            self._ops.append(("delete", Z.commit_path(self.claim.group, *tp), b""))

    def commit(self, zk: KazooClient, known_parents: set[str]) -> None:
        """Apply; raises NotCoordinatorError if the claim is gone, CoordinationError else."""
        for parent in sorted(self.parents - known_parents):
            zk.ensure_path(parent)
            known_parents.add(parent)
        txn = zk.transaction()
        txn.check(Z.coordinator_path(self.claim.group), self.claim.version)
        for op, path, data in self._ops:
            if op == "create":
                txn.create(path, data)
            elif op == "set":
                txn.set_data(path, data)
            else:
                txn.delete(path)
        results: list[Any] = txn.commit()
        if isinstance(results[0], BadVersionError | NoNodeError):
            raise NotCoordinatorError(f"lost the claim on group {self.claim.group!r}")
        try:
            check_transaction(results)
        except CoordinationError as exc:
            raise CoordinationError(f"group {self.claim.group!r}: {exc}") from exc


def release(zk: KazooClient, claim: Claim) -> None:
    """Give a group up (clean shutdown) so another broker can take it over at once."""
    node = GroupCoordinatorZNode(UNCLAIMED, claim.epoch)
    # A bad version means someone else holds it already.
    with contextlib.suppress(BadVersionError, NoNodeError):
        zk.set(Z.coordinator_path(claim.group), node.encode(), version=claim.version)


def delete_group(zk: KazooClient, claim: Claim) -> None:
    """Delete the whole ``/consumers/{group}`` tree in one fenced transaction."""
    _delete_tree(zk, claim.group, claim.version)


def delete_unreadable_group(zk: KazooClient, group: str) -> None:
    """Delete a group whose nodes do not decode, as ZooKeeper-era tools delete a group: the
    contents are not read, only whether a consumer is registered under ``ids`` (then
    NonEmptyGroupError, whatever its node holds). Fenced by the coordinator node's version when
    there is one (a claim taken meanwhile fails it); a consumer registering meanwhile fails it
    too, since its parent is then deleted with a child the transaction does not name."""
    registered = children(zk, Z.ids_path(group))
    if registered:
        raise NonEmptyGroupError(
            f"group {group!r} has {len(registered)} consumer node(s) registered under "
            f"{Z.ids_path(group)}"
        )
    stat = zk.exists(Z.coordinator_path(group))
    _delete_tree(zk, group, None if stat is None else stat.version)


def _delete_tree(zk: KazooClient, group: str, claim_version: int | None) -> None:
    doomed: list[str] = []

    def walk(path: str) -> None:
        for child in children(zk, path):
            walk(f"{path}/{child}")
        doomed.append(path)

    walk(Z.group_path(group))
    txn = zk.transaction()
    if claim_version is not None:
        txn.check(Z.coordinator_path(group), claim_version)
    for path in doomed:
        txn.delete(path)
    results: list[Any] = txn.commit()
    if claim_version is not None and isinstance(results[0], BadVersionError | NoNodeError):
        raise NotCoordinatorError(f"lost the claim on group {group!r}")
    if any(isinstance(result, NotEmptyError) for result in results):
        # A node was created under the tree after it was read: a consumer registering.
        raise NonEmptyGroupError(f"group {group!r} changed while it was being deleted")
    check_transaction(results)


@dataclass(frozen=True)
class ListedGroup:
    """A group as ListGroups needs it: its live coordinator (or None) and its group node, or
    the error that makes it unreadable (reported for that group alone)."""

    holder: int | None
    node: GroupZNode
    error: CorruptZNodeError | None = None


def list_groups(zk: KazooClient) -> dict[str, ListedGroup]:
    """Every group in ZooKeeper; a group whose nodes do not decode carries its error."""
    groups = children(zk, CONSUMERS)
    nodes = read_all(zk, [Z.group_path(g) for g in groups])
    claims = read_all(zk, [Z.coordinator_path(g) for g in groups])
    brokers = {int(b) for b in children(zk, BROKER_IDS) if b.isdigit()}
    found: dict[str, ListedGroup] = {}
    for g in groups:
        raw_claim = claims.get(Z.coordinator_path(g))
        try:
            broker = GroupCoordinatorZNode.decode(g, raw_claim).broker_id if raw_claim else None
            node = GroupZNode.decode(g, nodes.get(Z.group_path(g), b""))
        except CorruptZNodeError as exc:
            found[g] = ListedGroup(None, GroupZNode(), exc)
            continue
        found[g] = ListedGroup(broker if broker in brokers else None, node)
    return found
