"""The partition and replica state machines driven by cluster events (seed 002's controller).

Each reaction reads the context, asks ``pafka.cluster`` for decisions, moves states through
the transition tables, writes the new partition states to ZooKeeper in epoch-fenced multis
(``state_writes``; reads are pipelined, ``loading``), then sends LeaderAndIsr to the affected
replicas and UpdateMetadata to every live broker, in that order: brokers only ever hear of
decisions that are already durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient

from pafka.cluster.election import (
    Election,
    controlled_shutdown_leader,
    isr_without,
    offline_partition_leader,
    preferred_imbalance,
    preferred_replica_leader,
)
from pafka.cluster.states import PartitionState as PState
from pafka.cluster.states import ReplicaState as RState
from pafka.cluster.states import partition_transition, replica_transition
from pafka.cluster.topic_config import parse_topic_config
from pafka.control.messages import LeaderAndIsr, StopReplica, UpdateMetadata
from pafka.errors import CoordinationError, InvalidConfigError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import (
    PartitionState,
    PreferredReplicaElectionZNode,
    TopicConfigZNode,
    TopicZNode,
)
from services.controller.channel import Message
from services.controller.context import ControllerContext, PartitionEntry, TopicPartition
from services.controller.fencing import MAX_OPS_PER_MULTI, Epoch, fenced_commit, op_delete
from services.controller.isr_notifications import isr_pass
from services.controller.loading import (
    bounced as bounced_brokers,
)
from services.controller.loading import (
    load_brokers,
    load_context,
    load_topics,
    reread_states,
)
from services.controller.state_writes import commit_states
from services.controller.topic_deletion import delete_topics

log = logging.getLogger(__name__)

Send = Callable[[int, Message], None]
# Told of each written election, with the leader the partition had before (None: a new one).
OnElection = Callable[[int | None, Election], None]


class PartitionManager:
    def __init__(
        self,
        zk: ZkClient,
        controller_id: int,
        epoch: Epoch,
        context: ControllerContext,
        send: Send,
        on_election: OnElection | None = None,
    ) -> None:
        self.on_election = on_election
        self.zk = zk
        self.controller_id = controller_id
        self.epoch = epoch
        self.ctx = context
        self.send = send

    # -- loading ---------------------------------------------------------------------------------

    async def load(self) -> None:
        await self.zk.run(load_context, self.zk.kazoo, self.ctx)

    # -- reactions -------------------------------------------------------------------------------

    async def on_startup(self) -> None:
        changed = await self._settle(sorted(self.ctx.partitions))
        self._update_metadata(self.ctx.live, full=True)
        for broker_id in self.ctx.live:
            self._leader_and_isr([broker_id], sorted(self.ctx.partitions))
        log.info(
            "controller took over: %d partitions, %d elected",
            len(self.ctx.partitions),
            len(changed),
        )
        await self.on_delete_requests(sorted(self.ctx.deleting))

    async def on_brokers(self, children: set[int]) -> set[int]:
        """React to a change of ``/brokers/ids``; returns the brokers that left.

        A bounced broker is a new process that knows nothing of its partitions: as in Kafka, it
        is handled as a failure (its leaderships move, its replicas go offline) followed by a
        startup (full metadata and LeaderAndIsr for everything it hosts).
        """
        bounced = await self.zk.run(
            bounced_brokers, self.zk.kazoo, self.ctx, children & self.ctx.live
        )
        if bounced:
            log.info("brokers %s re-registered with a new session", sorted(bounced))
            await self._brokers_changed(set(), bounced)
        removed = self.ctx.live - children
        await self._brokers_changed(children - self.ctx.live, removed)
        # A bounced broker keeps its channel: the startup requests just queued on it are for
        # the new process, at the same address.
        return removed

    async def _brokers_changed(self, added: set[int], removed: set[int]) -> None:
        if not added and not removed:
            return
        if added:
            await self.zk.run(load_brokers, self.zk.kazoo, self.ctx, sorted(added))
        for broker_id in removed:
            del self.ctx.brokers[broker_id]
            self.ctx.broker_epochs.pop(broker_id, None)
        self.ctx.shutting_down -= added | removed
        log.info("brokers joined %s, left %s", sorted(added), sorted(removed))
        affected = [
            tp for tp, e in self.ctx.partitions.items() if set(e.replicas) & (added | removed)
        ]
        for tp in affected:
            for r in self.ctx.partitions[tp].replicas:
                key = (tp[0], tp[1], r)
                current = self.ctx.replica_states.get(key, RState.NEW)
                if r in removed and current is not RState.OFFLINE:
                    self.ctx.replica_states[key] = replica_transition(current, RState.OFFLINE)
                elif r in added and current is not RState.ONLINE:
                    self.ctx.replica_states[key] = replica_transition(current, RState.ONLINE)
        changed = await self._settle(sorted(affected), dead=removed)
        self._update_metadata(added, full=True)
        for broker_id in added:
            self._leader_and_isr(
                [broker_id],
                [tp for tp in affected if broker_id in self.ctx.partitions[tp].replicas],
            )
        self._broadcast(changed)

    async def on_topics(self, children: set[str]) -> None:
        new = sorted(children - set(self.ctx.topic_ids))
        if new:
            await self.zk.run(load_topics, self.zk.kazoo, self.ctx, new)
        created = [tp for topic in new for tp in self.ctx.topic_partitions(topic)]
        if created:
            changed = await self._settle(created)
            self._broadcast(changed)

    async def on_topic_data(self, topic: str, data: bytes) -> None:
        if topic not in self.ctx.topic_ids or topic in self.ctx.deleting:
            return
        node = TopicZNode.decode(topic, data)
        added = []
        for p, replicas in node.partitions.items():
            if (topic, p) not in self.ctx.partitions:
                self.ctx.partitions[(topic, p)] = PartitionEntry(replicas)
                added.append((topic, p))
        if added:
            log.info("topic %s grows to %d partitions", topic, len(node.partitions))
            self._broadcast(await self._settle(sorted(added)))

    async def on_topic_config(self, topic: str, data: bytes) -> None:
        """Track unclean.leader.election.enable; enabling it may bring offline partitions back."""
        if topic not in self.ctx.topic_ids:
            return
        try:
            config = parse_topic_config(TopicConfigZNode.decode(topic, data).config)
        except (InvalidConfigError, CoordinationError) as exc:
            log.warning("ignoring invalid config of topic %s: %s", topic, exc)
            return
        if not config.unclean_leader_election_enable:
            self.ctx.unclean_topics.discard(topic)
            return
        if topic not in self.ctx.unclean_topics:
            self.ctx.unclean_topics.add(topic)
            self._broadcast(await self._settle(self.ctx.topic_partitions(topic)))

    async def on_isr_notifications(self, max_notifications: int) -> bool:
        """Take one bounded pass over the pending ISR-change notifications and tell every
        broker the new ISRs; returns whether more were pending than the pass took."""
        done = await self.zk.run(isr_pass, self.zk.kazoo, self.ctx, self.epoch, max_notifications)
        if done.changed:
            self._update_metadata(self.ctx.live, partitions=done.changed)
        if done.handled:
            log.debug(
                "%d ISR-change notification(s): %d partition(s)", done.handled, len(done.changed)
            )
        return done.more

    async def on_controlled_shutdown(self, broker_id: int) -> list[TopicPartition]:
        """Move leadership off a broker that is stopping, and take it out of every ISR it can
        leave; returns the partitions it still leads (no other in-sync replica)."""
        if broker_id not in self.ctx.brokers:
            return []
        self.ctx.shutting_down.add(broker_id)

        def decide() -> dict[TopicPartition, Election]:
            decisions: dict[TopicPartition, Election] = {}
            for tp, entry in self.ctx.partitions.items():
                state = entry.state
                if state is None or broker_id not in entry.replicas or len(entry.replicas) < 2:
                    continue
                if state.leader == broker_id:
                    election = controlled_shutdown_leader(
                        entry.replicas, state.isr, self.ctx.live, self.ctx.shutting_down
                    )
                    if election is not None:
                        decisions[tp] = election
                elif broker_id in state.isr and len(state.isr) > 1:
                    isr = tuple(b for b in state.isr if b != broker_id)
                    decisions[tp] = Election(state.leader, isr)
            return decisions

        changed = await self._elect(decide)
        self._broadcast(changed)
        followed = tuple(
            tp
            for tp in changed
            if self.ctx.partitions[tp].state.leader != broker_id  # type: ignore[union-attr]
        )
        if followed:
            self.send(
                broker_id, StopReplica(self.controller_id, self.epoch.epoch, followed, delete=False)
            )
        remaining = [
            tp
            for tp, e in self.ctx.partitions.items()
            if e.state is not None and e.state.leader == broker_id
        ]
        log.info(
            "controlled shutdown of broker %d: %d moved, %d remain",
            broker_id,
            len(changed),
            len(remaining),
        )
        return sorted(remaining)

    async def on_delete_requests(self, topics: list[str]) -> None:
        await delete_topics(self, topics)

    async def rebalance_preferred(
        self, threshold: float, requested: list[TopicPartition] | None
    ) -> None:
        """Move leadership back to preferred replicas: the requested partitions, or those of
        brokers whose imbalance passed ``threshold``."""
        if requested is None:
            leaders = {
                tp: (e.state.leader, e.replicas)
                for tp, e in self.ctx.partitions.items()
                if e.state is not None
            }
            ratios = preferred_imbalance(leaders)
            heavy = {b for b, r in ratios.items() if r > threshold and b in self.ctx.live}
            requested = [tp for tp, (_, a) in leaders.items() if a and a[0] in heavy]
        else:
            # An operator's request: decide on ZooKeeper's current states, not the cache.
            known = [tp for tp in requested if tp in self.ctx.partitions]
            await self.zk.run(reread_states, self.zk.kazoo, self.ctx, known)
        chosen = requested

        def decide() -> dict[TopicPartition, Election]:
            decisions: dict[TopicPartition, Election] = {}
            for tp in chosen:
                entry = self.ctx.partitions.get(tp)
                if entry is None or entry.state is None or entry.state.leader == entry.replicas[0]:
                    continue
                election = preferred_replica_leader(entry.replicas, entry.state.isr, self.ctx.live)
                if election is not None:
                    decisions[tp] = election
            return decisions

        changed = await self._elect(decide)
        if changed:
            log.info("moved %d partition(s) back to their preferred leader", len(changed))
            self._broadcast(changed)
        await self.zk.run(self._clear_preferred_request, self.zk.kazoo)

    def _clear_preferred_request(self, zk: KazooClient) -> None:
        if zk.exists(PreferredReplicaElectionZNode.path()):
            fenced_commit(zk, self.epoch, [op_delete(PreferredReplicaElectionZNode.path())])

    # -- decisions and writes --------------------------------------------------------------------

    async def _settle(
        self, partitions: Iterable[TopicPartition], dead: set[int] | None = None
    ) -> list[TopicPartition]:
        """Bring partitions to the state the live brokers allow; returns the changed ones."""
        chosen = list(partitions)
        return await self._elect(lambda: self._settle_decisions(chosen, dead or set()))

    def _settle_decisions(
        self, partitions: list[TopicPartition], dead: set[int]
    ) -> dict[TopicPartition, Election]:
        live = self.ctx.eligible
        decisions: dict[TopicPartition, Election] = {}
        for tp in partitions:
            entry = self.ctx.partitions[tp]
            state = entry.state
            if state is None:
                alive = [r for r in entry.replicas if r in live]
                if alive:
                    if entry.phase is PState.NON_EXISTENT:
                        entry.phase = partition_transition(entry.phase, PState.NEW)
                    decisions[tp] = Election(alive[0], tuple(alive))
                continue
            isr = state.isr
            if state.leader in live and not set(isr) & dead:
                continue
            if state.leader in live:
                decisions[tp] = Election(state.leader, isr_without(isr, dead))
                continue
            unclean = tp[0] in self.ctx.unclean_topics
            election = offline_partition_leader(entry.replicas, isr, live, unclean)
            if election is None:
                if state.leader >= 0 or entry.phase is not PState.OFFLINE:
                    decisions[tp] = Election(-1, isr_without(isr, dead | (set(isr) - live)))
                continue
            decisions[tp] = election
        return decisions

    async def _elect(
        self, decide: Callable[[], dict[TopicPartition, Election]], attempts: int = 4
    ) -> list[TopicPartition]:
        """Decide, write fenced and conditionally; for the partitions whose state changed
        under us (a leader updated its ISR), re-read and decide again, in ever smaller multis
        so that one busy partition does not hold back the others of its multi. Returns every
        partition written."""
        written: set[TopicPartition] = set()
        max_ops = MAX_OPS_PER_MULTI
        for _ in range(attempts):
            decisions = decide()
            failed = await self._write_elections(decisions, max_ops)
            written.update(tp for tp in decisions if tp not in failed)
            if not failed:
                return sorted(written)
            max_ops = max(1, max_ops // 10)
        log.error("partition states kept changing under the controller; will retry on next event")
        return sorted(written)

    async def _write_elections(
        self, decisions: dict[TopicPartition, Election], max_ops: int = MAX_OPS_PER_MULTI
    ) -> set[TopicPartition]:
        """Write the decisions; returns the partitions not written (re-read since)."""
        if not decisions:
            return set()
        states = {}
        previous: dict[TopicPartition, int | None] = {}
        for tp, election in decisions.items():
            entry = self.ctx.partitions[tp]
            old = entry.state
            previous[tp] = old.leader if old else None
            states[tp] = PartitionState(
                leader=election.leader,
                leader_epoch=(old.leader_epoch + 1) if old else 0,
                isr=election.isr,
                controller_epoch=self.epoch.epoch,
            )
            if election.unclean:
                log.warning("unclean leader election for %s-%d: %d", tp[0], tp[1], election.leader)
        failed = await self.zk.run(
            commit_states, self.zk.kazoo, self.ctx, self.epoch, states, max_ops
        )
        if failed:
            await self.zk.run(reread_states, self.zk.kazoo, self.ctx, sorted(failed))
        for tp, state in states.items():
            if tp in failed:
                continue
            entry = self.ctx.partitions[tp]
            target = PState.ONLINE if state.leader >= 0 else PState.OFFLINE
            entry.phase = partition_transition(entry.phase, target, f"{tp[0]}-{tp[1]}")
            entry.state = state
            # A create leaves version 0; a conditional set bumps it by one.
            entry.zk_version = entry.zk_version + 1 if entry.zk_version >= 0 else 0
        if self.on_election is not None:
            # Only once written: a decision lost to a concurrent change was no election.
            for tp, election in decisions.items():
                if tp not in failed:
                    self.on_election(previous[tp], election)
        return failed

    # -- telling brokers -------------------------------------------------------------------------

    def _leader_and_isr(self, brokers: Iterable[int], partitions: Iterable[TopicPartition]) -> None:
        infos = [i for tp in partitions if (i := self.ctx.info(tp)) is not None]
        live = self.ctx.live_brokers()
        for broker_id in brokers:
            mine = tuple(i for i in infos if broker_id in i.replicas)
            if mine:
                leaders = tuple(b for b in live if any(i.leader == b.id for i in mine))
                self.send(
                    broker_id, LeaderAndIsr(self.controller_id, self.epoch.epoch, mine, leaders)
                )

    def _update_metadata(
        self,
        brokers: Iterable[int],
        *,
        full: bool = False,
        partitions: Iterable[TopicPartition] | None = None,
        deleted: list[str] | None = None,
    ) -> None:
        if full:
            infos = tuple(self.ctx.all_infos())
        else:
            infos = tuple(i for tp in partitions or () if (i := self.ctx.info(tp)) is not None)
        message = UpdateMetadata(
            controller_id=self.controller_id,
            controller_epoch=self.epoch.epoch,
            live_brokers=self.ctx.live_brokers(),
            partitions=infos,
            deleted_topics=tuple(deleted or ()),
            full=full,
        )
        for broker_id in brokers:
            self.send(broker_id, message)

    def _broadcast(self, changed: list[TopicPartition]) -> None:
        """LeaderAndIsr to the replicas of changed partitions, then metadata to everyone."""
        involved = {r for tp in changed for r in self.ctx.partitions[tp].replicas}
        self._leader_and_isr(involved & self.ctx.live, changed)
        self._update_metadata(self.ctx.live, partitions=changed)
