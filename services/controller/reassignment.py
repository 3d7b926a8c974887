"""Partition reassignment, as Kafka 2.x runs it from ``/admin/reassign_partitions``.

For each partition: the replica set grows to the union of old and target (new replicas start
following), the controller waits until every target replica is in the ISR, then moves
leadership into the target if needed, shrinks replicas and ISR to the target, deletes the
data of the replicas that left and drops the partition from the request. Every step is a
fenced write first.

AlterPartitionReassignments (KIP-455) adds targets to the same request node, and cancels one
(null replicas) by reassigning the partition back to the replicas it had before, which are in
sync already, so the cancellation completes at once. Those original replicas are known only to
the controller that started the reassignment; after a failover a cancellation is refused.
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.cluster.election import Election, reassign_partition_leader
from pafka.control.messages import StopReplica
from pafka.errors import (
    InvalidReplicaAssignmentError,
    KafkaApiError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from pafka.zk.znodes import ReassignmentZNode, TopicZNode
from services.controller.context import TopicPartition
from services.controller.fencing import fenced_commit, op_create, op_delete, op_set
from services.controller.partitions import PartitionManager

log = logging.getLogger(__name__)


class Reassignments:
    def __init__(self, manager: PartitionManager) -> None:
        self.m = manager
        self.targets: dict[TopicPartition, tuple[int, ...]] = {}
        # The replicas before the reassignment started (what a cancellation returns to).
        self.originals: dict[TopicPartition, tuple[int, ...]] = {}

    async def on_request(self, data: bytes | None) -> None:
        if data is None:
            return
        request = ReassignmentZNode.decode(data)
        for tp, target in request.targets.items():
            problem = self._invalid(tp, target)
            if problem:
                log.error("reassignment of %s-%d refused: %s", tp[0], tp[1], problem)
                continue
            if self.targets.get(tp) != target:
                self.targets[tp] = target
                await self._start(tp, target)
        await self.m.zk.run(self._write_remaining, self.m.zk.kazoo)
        await self.check()

    def _invalid(self, tp: TopicPartition, target: tuple[int, ...]) -> str | None:
        if tp not in self.m.ctx.partitions:
            return "unknown partition"
        if not target or len(set(target)) != len(target):
            return f"bad replica list {target}"
        unknown = set(target) - self.m.ctx.live
        return f"brokers {sorted(unknown)} are not registered" if unknown else None

    async def alter(
        self, requested: dict[TopicPartition, tuple[int, ...] | None]
    ) -> dict[TopicPartition, KafkaApiError | None]:
        """AlterPartitionReassignments: start, change or cancel (None) each one."""
        outcome: dict[TopicPartition, KafkaApiError | None] = {}
        for tp, target in requested.items():
            if tp not in self.m.ctx.partitions or tp[0] in self.m.ctx.deleting:
                outcome[tp] = UnknownTopicOrPartitionError(f"unknown partition {tp[0]}-{tp[1]}")
                continue
            if target is None:
                if tp not in self.targets:
                    outcome[tp] = NoReassignmentInProgressError(
                        f"no reassignment of {tp[0]}-{tp[1]} is in progress"
                    )
                    continue
                original = self.originals.get(tp)
                if original is None:
                    outcome[tp] = InvalidReplicaAssignmentError(
                        f"the replicas of {tp[0]}-{tp[1]} before its reassignment are not known "
                        "to this controller; reassign it explicitly"
                    )
                    continue
                target = original
            problem = self._invalid(tp, target)
            if problem:
                outcome[tp] = InvalidReplicaAssignmentError(problem)
                continue
            outcome[tp] = None
            if self.targets.get(tp) != target:
                self.targets[tp] = target
                await self._start(tp, target)
        await self.m.zk.run(self._write_remaining, self.m.zk.kazoo)
        await self.check()
        return outcome

    async def _start(self, tp: TopicPartition, target: tuple[int, ...]) -> None:
        entry = self.m.ctx.partitions[tp]
        self.originals.setdefault(tp, entry.replicas)
        union = tuple(dict.fromkeys(entry.replicas + target))
        if union != entry.replicas:
            await self.m.zk.run(self._write_assignment, self.m.zk.kazoo, tp, union)
            entry.replicas = union
        state = entry.state
        if state is None:
            return
        # A new leader epoch tells every replica (the new ones too) the new replica set.
        changed = await self.m._elect(lambda: {tp: Election(state.leader, state.isr)})
        self.m._broadcast(changed)
        log.info("reassigning %s-%d to %s (replicas now %s)", tp[0], tp[1], target, union)

    async def check(self) -> None:
        """Finish every reassignment whose target replicas are all in sync."""
        for tp, target in list(self.targets.items()):
            entry = self.m.ctx.partitions.get(tp)
            if entry is None:
                del self.targets[tp]
                continue
            state = entry.state
            if state is None or not set(target) <= set(state.isr):
                continue
            leaving = [b for b in entry.replicas if b not in target]
            await self.m.zk.run(self._write_assignment, self.m.zk.kazoo, tp, target)
            entry.replicas = target

            def decide(
                tp: TopicPartition = tp, target: tuple[int, ...] = target
            ) -> dict[TopicPartition, Election]:
                current = self.m.ctx.partitions[tp].state
                assert current is not None
                isr = tuple(b for b in current.isr if b in target)
                if current.leader in target:
                    return {tp: Election(current.leader, isr)}
                moved = reassign_partition_leader(target, isr, self.m.ctx.eligible)
                return {tp: Election(moved.leader, isr)} if moved else {}

            self.m._broadcast(await self.m._elect(decide))
            for broker_id in leaving:
                self.m.send(
                    broker_id,
                    StopReplica(self.m.controller_id, self.m.epoch.epoch, (tp,), delete=True),
                )
            del self.targets[tp]
            self.originals.pop(tp, None)
            log.info("reassignment of %s-%d complete: replicas %s", tp[0], tp[1], target)
        await self.m.zk.run(self._write_remaining, self.m.zk.kazoo)

    def _write_assignment(
        self, zk: KazooClient, tp: TopicPartition, replicas: tuple[int, ...]
    ) -> None:
        path = TopicZNode.path(tp[0])
        data, stat = zk.get(path)
        node = TopicZNode.decode(tp[0], data)
        updated = TopicZNode(node.topic_id, {**node.partitions, tp[1]: replicas})
        fenced_commit(zk, self.m.epoch, [op_set(path, updated.encode(), stat.version)])

    def _write_remaining(self, zk: KazooClient) -> None:
        """The request node lists only unfinished partitions; it is deleted when none remain."""
        path = ReassignmentZNode.path()
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            if self.targets:  # started by AlterPartitionReassignments: recorded for a failover
                payload = ReassignmentZNode(dict(self.targets)).encode()
                fenced_commit(zk, self.m.epoch, [op_create(path, payload)])
            return
        if self.targets and ReassignmentZNode.decode(data).targets == self.targets:
            return  # already says exactly this; writing again would only re-fire the watch
        if self.targets:
            payload = ReassignmentZNode(dict(self.targets)).encode()
            fenced_commit(zk, self.m.epoch, [op_set(path, payload, stat.version)])
        else:
            fenced_commit(zk, self.m.epoch, [op_delete(path)])
