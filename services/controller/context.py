"""What the active controller knows: live brokers, topics, assignments, partition states.

Loaded from ZooKeeper when a controller becomes active and kept current by its own writes and
by watch events; dropped when it resigns. Only the active controller's event loop touches it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pafka.cluster.states import PartitionState as PState
from pafka.cluster.states import ReplicaState
from pafka.control.messages import LiveBroker, PartitionInfo
from pafka.zk.znodes import BrokerInfo, PartitionState

TopicPartition = tuple[str, int]


@dataclass
class PartitionEntry:
    replicas: tuple[int, ...]
    state: PartitionState | None = None
    zk_version: int = -1
    phase: PState = PState.NON_EXISTENT


@dataclass
class ControllerContext:
    epoch: int
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    # Each live broker's registration czxid (Kafka's broker epoch): a broker that died and
    # re-registered between two reads of /brokers/ids keeps its id but not its czxid.
    broker_epochs: dict[int, int] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    partitions: dict[TopicPartition, PartitionEntry] = field(default_factory=dict)
    replica_states: dict[tuple[str, int, int], ReplicaState] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)
    unclean_topics: set[str] = field(default_factory=set)
    # Brokers in controlled shutdown: alive, but never chosen as leader again.
    shutting_down: set[int] = field(default_factory=set)

    @property
    def live(self) -> set[int]:
        return set(self.brokers)

    @property
    def eligible(self) -> set[int]:
        """Brokers that may lead: alive and not shutting down."""
        return set(self.brokers) - self.shutting_down

    def topic_partitions(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.partitions if tp[0] == topic)

    def live_brokers(self) -> tuple[LiveBroker, ...]:
        return tuple(
            LiveBroker(b.id, b.host, b.port, b.rack, b.listeners)
            for b in sorted(self.brokers.values(), key=lambda b: b.id)
        )

    def info(self, tp: TopicPartition) -> PartitionInfo | None:
        entry = self.partitions.get(tp)
        if entry is None or entry.state is None:
            return None
        s = entry.state
        return PartitionInfo(
            topic=tp[0],
            topic_id=self.topic_ids[tp[0]],
            partition=tp[1],
            leader=s.leader,
            leader_epoch=s.leader_epoch,
            isr=s.isr,
            replicas=entry.replicas,
            zk_version=entry.zk_version,
            controller_epoch=s.controller_epoch,
        )

    def all_infos(self) -> list[PartitionInfo]:
        return [i for tp in sorted(self.partitions) if (i := self.info(tp)) is not None]

    def offline_count(self) -> int:
        return sum(
            1
            for e in self.partitions.values()
            if e.state is not None and (e.state.leader < 0 or e.state.leader not in self.brokers)
        )
