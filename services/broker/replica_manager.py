"""The partitions this broker hosts, changed only by the controller's control requests.

The controller epoch is checked here, once, for every control request: a request from an epoch
older than the highest one seen is refused whole (STALE_CONTROLLER_EPOCH), so a deposed
controller that wakes up cannot move leadership or delete data.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import LeaderAndIsr, StopReplica
from pafka.errors import (
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from pafka.storage.log_manager import LogManager
from services.broker.follower import FollowerManager
from services.broker.isr import IsrChanged
from services.broker.metadata_cache import MetadataCache
from services.broker.partition import Partition

log = logging.getLogger(__name__)

ConfigSource = Callable[[str], Awaitable[TopicConfig]]


class ReplicaManager:
    def __init__(
        self,
        broker_id: int,
        logs: LogManager,
        metadata: MetadataCache,
        config_for: ConfigSource,
        followers: FollowerManager,
        on_isr_change: IsrChanged | None = None,
    ) -> None:
        self.followers = followers
        self.on_isr_change = on_isr_change
        self.broker_id = broker_id
        self.logs = logs
        self.metadata = metadata
        self.config_for = config_for
        self.partitions: dict[tuple[str, int], Partition] = {}
        self.controller_epoch = -1

    def check_controller_epoch(self, epoch: int) -> None:
        if epoch < self.controller_epoch:
            raise StaleControllerEpochError(
                f"controller epoch {epoch} is older than {self.controller_epoch} already seen"
            )
        self.controller_epoch = epoch

    async def leader_and_isr(self, request: LeaderAndIsr) -> dict[str, int]:
        self.check_controller_epoch(request.controller_epoch)
        errors: dict[str, int] = {}
        for info in request.partitions:
            if self.broker_id not in info.replicas:
                continue
            key = (info.topic, info.partition)
            partition = self.partitions.get(key)
            if partition is None:
                config = await self.config_for(info.topic)
                log_ = self.logs.get_or_create(info.topic, info.partition, config.log_config())
                partition = Partition(info.topic, info.partition, log_, config)
                self.partitions[key] = partition
            was_leading, isr_before = partition.is_leader, partition.isr
            if not partition.apply(info, self.broker_id):
                errors[f"{info.topic}-{info.partition}"] = StaleControllerEpochError.code
                continue
            if was_leading and partition.is_leader and self.on_isr_change is not None:
                # The controller changed the ISR of a partition this broker kept leading (it
                # removed a dead follower): counted too, so a lost follower shows up as ISR
                # churn whichever side notices it first.
                self.on_isr_change(isr_before, partition.isr)
            if partition.is_leader or info.leader < 0:
                self.followers.unfollow(info.topic, info.partition)
                continue
            leader = next((b for b in request.live_leaders if b.id == info.leader), None)
            leader = leader or self.metadata.brokers.get(info.leader)
            if leader is None:
                log.warning("%r: leader %d is not among live brokers", partition, info.leader)
                continue
            self.followers.follow(partition, leader)
        return errors

    def stop_replica(self, request: StopReplica) -> dict[str, int]:
        self.check_controller_epoch(request.controller_epoch)
        for topic, index in request.partitions:
            partition = self.partitions.pop((topic, index), None)
            self.followers.unfollow(topic, index)
            if partition is not None:
                partition.is_leader = False
                partition.notifier.notify()
            if request.delete:
                self.logs.delete(topic, index)
                log.info("deleted replica %s-%d", topic, index)
        return {}

    def update_config(self, topic: str, config: TopicConfig) -> None:
        for (name, _), partition in self.partitions.items():
            if name == topic:
                partition.config = config
                partition.log.config = config.log_config()

    def leader_partition(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it, else the error a client should see."""
        partition = self.partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            return partition
        info = self.metadata.partition(topic, index)
        if info is None:
            raise UnknownTopicOrPartitionError(f"unknown topic-partition {topic}-{index}")
        if info.leader < 0:
            raise LeaderNotAvailableError(f"{topic}-{index} has no leader")
        raise NotLeaderOrFollowerError(
            f"broker {self.broker_id} is not the leader of {topic}-{index}; broker {info.leader} is"
        )

    def checkpoint(self) -> None:
        self.logs.checkpoint_all()

    def close(self) -> None:
        self.logs.close_all()
