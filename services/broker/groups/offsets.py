"""Committed offsets: OffsetCommit and OffsetFetch against ``/consumers/{group}/offsets``.

A member's commit is accepted only for its group's current generation and only for partitions
it owns, so a member that was fenced out by a rebalance cannot move a position that now belongs
to someone else. A commit without a generation (below 0) is what standalone consumers, admin tools
and ZooKeeper-coordinated clients (pykafka's BalancedConsumer, with its own consumer id as the
member id) send; as in Kafka, it is accepted, whatever the member id, while the group has no
Kafka-protocol members.

A group without Kafka-protocol members may have its offsets moved behind the coordinator's
back (ZooKeeper-coordinated consumers commit straight to ZooKeeper, and so does OffsetCommit
v0 on any broker), so its offsets are read afresh from ZooKeeper before each fetch and commit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pafka.errors import (
    CorruptZNodeError,
    IllegalGenerationError,
    KafkaApiError,
    OffsetMetadataTooLargeError,
    OffsetOutOfRangeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.state import GroupState
from pafka.zk.znodes import CommittedOffsetZNode
from services.broker.groups import shared_registry
from services.broker.groups.admission import check_generation, check_member
from services.broker.groups.coordinator import GroupCoordinator
from services.broker.groups.runtime import GroupRuntime, now_ms

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetToCommit:
    offset: int
    leader_epoch: int
    metadata: str | None
    # OffsetCommit v1 carries the commit's time; -1 (and later versions): the broker's clock.
    commit_timestamp_ms: int = -1


class GroupOffsets:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    async def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, OffsetToCommit],
    ) -> dict[TopicPartition, KafkaApiError | None]:
        """Per-partition outcome; a whole-request problem (unknown member, stale generation)
        is raised and applies to every partition."""
        simple = generation < 0
        # Only a commit without a generation may bring a group into being; one claiming a
        # generation of a group that does not exist comes from an older life of it.
        rt = await self.coordinator.group(group_id, create=simple)
        if rt is None and simple:
            raise UnknownMemberIdError(f"group {group_id!r} has no member {member_id!r}")
        if rt is None:
            raise IllegalGenerationError(f"group {group_id!r} has no generation {generation}")
        async with rt.lock:
            owner = self._committer(rt, generation, member_id, instance_id)
            if not rt.meta.members:
                await self._refresh(rt)
            results, valid = self.screen(rt, offsets, owner)
            write = rt.write()
            accepted: dict[TopicPartition, CommittedOffsetZNode] = {}
            for tp, entry in valid.items():
                node = self._node(entry)
                write.put_offset(tp, node, tp in rt.offsets, tp in rt.commit_nodes)
                accepted[tp] = node
            await self.coordinator.apply(rt, write)
            rt.offsets.update(accepted)
        return results

    def _committer(
        self, rt: GroupRuntime, generation: int, member_id: str, instance_id: str | None
    ) -> str | None:
        """The member whose ownership each partition is checked against (None: no member)."""
        meta = rt.meta
        if generation < 0 and not meta.members:
            return None
        if generation < 0 and not member_id and instance_id is None:
            raise UnknownMemberIdError(
                f"group {rt.group_id!r} has members; commits must come from one of them"
            )
        member = check_member(rt, member_id, instance_id)
        check_generation(rt, generation)
        if meta.state is GroupState.COMPLETING_REBALANCE:
            raise RebalanceInProgressError()
        member.last_heard_ms = now_ms()
        return member_id

    def screen(
        self,
        rt: GroupRuntime | None,
        offsets: dict[TopicPartition, OffsetToCommit],
        owner: str | None,
    ) -> tuple[dict[TopicPartition, KafkaApiError | None], dict[TopicPartition, OffsetToCommit]]:
        """Every partition's outcome so far (None: accepted), and the accepted entries."""
        results: dict[TopicPartition, KafkaApiError | None] = {}
        valid: dict[TopicPartition, OffsetToCommit] = {}
        for tp, entry in sorted(offsets.items()):
            try:
                self._check_partition(rt, tp, entry, owner)
            except KafkaApiError as exc:
                results[tp] = exc
                continue
            results[tp] = None
            valid[tp] = entry
        return results, valid

    def _check_partition(
        self, rt: GroupRuntime | None, tp: TopicPartition, entry: OffsetToCommit, owner: str | None
    ) -> None:
        limit = self.coordinator.config.offset_metadata_max_bytes
        if entry.offset < 0:
            # No log has a negative offset, and the seeds' offset node holds a plain count.
            raise OffsetOutOfRangeError(f"offset {entry.offset} of {tp[0]}-{tp[1]} is negative")
        if self.coordinator.metadata.partition(*tp) is None:
            raise UnknownTopicOrPartitionError(f"{tp[0]}-{tp[1]} does not exist")
        if entry.metadata is not None and len(entry.metadata.encode()) > limit:
            raise OffsetMetadataTooLargeError(f"offset metadata is over {limit} bytes")
        if owner is not None and rt is not None and rt.meta.owners.get(tp) != owner:
            raise IllegalGenerationError(f"{owner} does not own {tp[0]}-{tp[1]}")

    @staticmethod
    def _node(entry: OffsetToCommit) -> CommittedOffsetZNode:
        if entry.commit_timestamp_ms >= 0:
            return CommittedOffsetZNode(
                entry.offset, entry.leader_epoch, entry.metadata or "", entry.commit_timestamp_ms
            )
        return CommittedOffsetZNode(entry.offset, entry.leader_epoch, entry.metadata or "")

    async def _refresh(self, rt: GroupRuntime) -> None:
        zk = self.coordinator.zk
        try:
            stored = await zk.run(shared_registry.read_offsets, zk.kazoo, rt.group_id)
            rt.offsets, rt.commit_nodes = stored.offsets, stored.commit_nodes
        except CorruptZNodeError as exc:
            log.warning("group %r cannot be used: %s", rt.group_id, exc)
            raise

    async def fetch(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffsetZNode | None]:
        """Committed offsets of ``partitions`` (None: every committed partition)."""
        rt = await self.coordinator.group(group_id, create=False)
        if rt is not None and not rt.meta.members:
            async with rt.lock:
                await self._refresh(rt)
        committed = dict(rt.offsets) if rt is not None else {}
        if partitions is None:
            return dict(sorted(committed.items()))
        return {tp: committed.get(tp) for tp in partitions}

    # -- version 0: ZooKeeper straight, on any broker (Kafka 0.8.1) ---------------------------

    async def commit_v0(
        self, group_id: str, offsets: dict[TopicPartition, OffsetToCommit]
    ) -> dict[TopicPartition, KafkaApiError | None]:
        results, valid = self.screen(None, offsets, None)
        accepted = {tp: self._node(entry) for tp, entry in valid.items()}
        self.coordinator.require_zookeeper(group_id)
        zk = self.coordinator.zk
        await zk.run(shared_registry.write_offsets_unfenced, zk.kazoo, group_id, accepted)
        held = self.coordinator.groups.get(group_id)
        if held is not None:
            held.offsets.update(accepted)
            held.commit_nodes |= set(accepted)
        return results

    async def fetch_v0(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, CommittedOffsetZNode | None]:
        self.coordinator.require_zookeeper(group_id)
        zk = self.coordinator.zk
        found = (await zk.run(shared_registry.read_offsets, zk.kazoo, group_id, partitions)).offsets
        return {tp: found.get(tp) for tp in partitions}
