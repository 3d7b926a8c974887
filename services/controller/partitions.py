"""The partition and replica state machines driven by cluster events (seed 002's controller).

Each reaction reads the context, asks ``pafka.cluster`` for decisions, moves states through
the transition tables, writes the new partition states to ZooKeeper in one epoch-fenced
transaction, then sends LeaderAndIsr to the affected replicas and UpdateMetadata to every
live broker, in that order: brokers only ever hear of decisions that are already durable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

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
from pafka.errors import CoordinationError, InvalidConfigError, ZkBadVersionError
from pafka.zk.client import ZkClient
from pafka.zk.znodes import (
    BROKER_IDS,
    BROKER_TOPICS,
    DELETE_TOPICS,
    BrokerInfo,
    DeleteTopicZNode,
    IsrChangeNotificationZNode,
    PartitionState,
    PreferredReplicaElectionZNode,
    TopicConfigZNode,
    TopicPartitionsPayload,
    TopicZNode,
)
from services.controller.channel import Message
from services.controller.context import ControllerContext, PartitionEntry, TopicPartition
from services.controller.fencing import Epoch, Op, fenced_commit, op_create, op_delete, op_set

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
        await self.zk.run(self._load, self.zk.kazoo)

    def _load(self, zk: KazooClient) -> None:
        for child in zk.get_children(BROKER_IDS):
            self._load_broker(zk, int(child))
        for topic in zk.get_children(BROKER_TOPICS):
            self._load_topic(zk, topic)
        self.ctx.deleting = set(zk.get_children(DELETE_TOPICS))

    def _load_broker(self, zk: KazooClient, broker_id: int) -> None:
        try:
            data, stat = zk.get(BrokerInfo.path(broker_id))
        except NoNodeError:
            return
        self.ctx.brokers[broker_id] = BrokerInfo.decode(broker_id, data)
        self.ctx.broker_epochs[broker_id] = stat.czxid

    def _bounced(self, zk: KazooClient, broker_ids: set[int]) -> set[int]:
        """Brokers whose registration was replaced since we read it: a restart that the
        children watch missed because the id was back before the list was read again."""
        bounced = set()
        for broker_id in broker_ids:
            stat = zk.exists(BrokerInfo.path(broker_id))
            if stat is not None and stat.czxid != self.ctx.broker_epochs.get(broker_id):
                bounced.add(broker_id)
        return bounced

    def _load_topic(self, zk: KazooClient, topic: str) -> TopicZNode | None:
        try:
            data, _ = zk.get(TopicZNode.path(topic))
        except NoNodeError:
            return None
        node = TopicZNode.decode(topic, data)
        self.ctx.topic_ids[topic] = node.topic_id
        self._load_unclean_flag(zk, topic)
        for p, replicas in node.partitions.items():
            entry = self.ctx.partitions.setdefault((topic, p), PartitionEntry(replicas))
            entry.replicas = replicas
            self._read_state(zk, (topic, p), entry)
        return node

    def _load_unclean_flag(self, zk: KazooClient, topic: str) -> None:
        try:
            data, _ = zk.get(TopicConfigZNode.path(topic))
            config = parse_topic_config(TopicConfigZNode.decode(topic, data).config)
        except (NoNodeError, InvalidConfigError):
            return
        if config.unclean_leader_election_enable:
            self.ctx.unclean_topics.add(topic)

    def _read_state(self, zk: KazooClient, tp: TopicPartition, entry: PartitionEntry) -> None:
        try:
            data, stat = zk.get(PartitionState.path(*tp))
        except NoNodeError:
            entry.state, entry.zk_version = None, -1
            return
        entry.state = PartitionState.decode(tp[0], tp[1], data)
        entry.zk_version = stat.version
        live = entry.state.leader in self.ctx.brokers
        entry.phase = PState.ONLINE if live else PState.OFFLINE
        for r in entry.replicas:
            alive = r in self.ctx.brokers
            self.ctx.replica_states[(tp[0], tp[1], r)] = RState.ONLINE if alive else RState.OFFLINE

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
        bounced = await self.zk.run(self._bounced, self.zk.kazoo, children & self.ctx.live)
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
        for broker_id in added:
            await self.zk.run(self._load_broker, self.zk.kazoo, broker_id)
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
        for topic in new:
            await self.zk.run(self._load_topic, self.zk.kazoo, topic)
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

    async def on_isr_notifications(self, children: list[str]) -> None:
        def collect(zk: KazooClient) -> set[TopicPartition]:
            found: set[TopicPartition] = set()
            handled = []
            for child in children:
                path = IsrChangeNotificationZNode.path(child)
                try:
                    data, _ = zk.get(path)
                except NoNodeError:
                    continue  # handled by an earlier event that listed it too
                found.update(TopicPartitionsPayload.decode(data, path).partitions)
                handled.append(path)
            for tp in found:
                entry = self.ctx.partitions.get(tp)
                if entry is not None:
                    self._read_state(zk, tp, entry)
            fenced_commit(zk, self.epoch, [op_delete(path) for path in handled])
            return found

        if children:
            changed = await self.zk.run(collect, self.zk.kazoo)
            self._update_metadata(self.ctx.live, partitions=sorted(changed))

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
        for topic in topics:
            self.ctx.deleting.add(topic)
            await self._delete_topic(topic)

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
            await self.zk.run(self._reread, self.zk.kazoo, known)
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
        self, decide: Callable[[], dict[TopicPartition, Election]], attempts: int = 3
    ) -> list[TopicPartition]:
        """Decide, write fenced and conditionally; if a partition state changed under us
        (a leader updated its ISR), re-read and decide again."""
        for _ in range(attempts):
            decisions = decide()
            if await self._write_elections(decisions):
                return sorted(decisions)
        log.error("partition states kept changing under the controller; will retry on next event")
        return []

    async def _write_elections(self, decisions: dict[TopicPartition, Election]) -> bool:
        if not decisions:
            return True
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
        try:
            await self.zk.run(self._commit_states, self.zk.kazoo, states)
        except ZkBadVersionError:
            await self.zk.run(self._reread, self.zk.kazoo, list(states))
            return False
        for tp, state in states.items():
            entry = self.ctx.partitions[tp]
            target = PState.ONLINE if state.leader >= 0 else PState.OFFLINE
            entry.phase = partition_transition(entry.phase, target, f"{tp[0]}-{tp[1]}")
            entry.state = state
            # A create leaves version 0; a conditional set bumps it by one.
            entry.zk_version = entry.zk_version + 1 if entry.zk_version >= 0 else 0
        if self.on_election is not None:
            # Only once written: a decision lost to a concurrent change was no election.
            for tp, election in decisions.items():
                self.on_election(previous[tp], election)
        return True

    def _reread(self, zk: KazooClient, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._read_state(zk, tp, self.ctx.partitions[tp])

    def _commit_states(self, zk: KazooClient, states: dict[TopicPartition, PartitionState]) -> None:
        ops: list[Op] = []
        topics_with_parent: set[str] = set()
        for (topic, p), state in sorted(states.items()):
            entry = self.ctx.partitions[(topic, p)]
            path = PartitionState.path(topic, p)
            if entry.zk_version >= 0:
                ops.append(op_set(path, state.encode(), entry.zk_version))
                continue
            parent = TopicZNode.partitions_path(topic)
            if topic not in topics_with_parent and not zk.exists(parent):
                ops.append(op_create(parent))
            topics_with_parent.add(topic)
            ppath = PartitionState.partition_path(topic, p)
            if not zk.exists(ppath):
                ops.append(op_create(ppath))
            ops.append(op_create(path, state.encode()))
        fenced_commit(zk, self.epoch, ops)

    async def _delete_topic(self, topic: str) -> None:
        partitions = self.ctx.topic_partitions(topic)
        for tp in partitions:
            entry = self.ctx.partitions[tp]
            for r in entry.replicas:
                key = (tp[0], tp[1], r)
                current = self.ctx.replica_states.get(key, RState.ONLINE)
                if current is not RState.OFFLINE:
                    current = replica_transition(current, RState.OFFLINE)
                self.ctx.replica_states[key] = replica_transition(current, RState.DELETION_STARTED)
        for broker_id in self.ctx.live:
            mine = tuple(tp for tp in partitions if broker_id in self.ctx.partitions[tp].replicas)
            if mine:
                self.send(
                    broker_id, StopReplica(self.controller_id, self.epoch.epoch, mine, delete=True)
                )
        await self.zk.run(self._delete_znodes, self.zk.kazoo, topic)
        for tp in partitions:
            entry = self.ctx.partitions.pop(tp)
            if entry.phase is not PState.NON_EXISTENT:
                if entry.phase is not PState.OFFLINE:
                    entry.phase = partition_transition(entry.phase, PState.OFFLINE)
                partition_transition(entry.phase, PState.NON_EXISTENT)
            for r in entry.replicas:
                key = (tp[0], tp[1], r)
                state = replica_transition(self.ctx.replica_states[key], RState.DELETION_SUCCESSFUL)
                replica_transition(state, RState.NON_EXISTENT)
                self.ctx.replica_states.pop(key, None)
        self.ctx.topic_ids.pop(topic, None)
        self.ctx.deleting.discard(topic)
        self.ctx.unclean_topics.discard(topic)
        self._update_metadata(self.ctx.live, partitions=[], deleted=[topic])
        log.info("deleted topic %s", topic)

    def _delete_znodes(self, zk: KazooClient, topic: str) -> None:
        ops: list[Op] = []
        topic_path = TopicZNode.path(topic)
        if zk.exists(topic_path):
            parts_path = TopicZNode.partitions_path(topic)
            if zk.exists(parts_path):
                for child in zk.get_children(parts_path):
                    partition = int(child)
                    if zk.exists(PartitionState.path(topic, partition)):
                        ops.append(op_delete(PartitionState.path(topic, partition)))
                    ops.append(op_delete(PartitionState.partition_path(topic, partition)))
                ops.append(op_delete(parts_path))
            ops.append(op_delete(topic_path))
        if zk.exists(TopicConfigZNode.path(topic)):
            ops.append(op_delete(TopicConfigZNode.path(topic)))
        if zk.exists(DeleteTopicZNode.path(topic)):
            ops.append(op_delete(DeleteTopicZNode.path(topic)))
        fenced_commit(zk, self.epoch, ops)

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
