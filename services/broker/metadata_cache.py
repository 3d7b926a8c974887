"""The broker's view of cluster metadata, fed only by the controller's UpdateMetadata.

Metadata requests are answered from here, never from ZooKeeper, so every broker answers the same
way as soon as the controller has told it and clients see one consistent picture per broker.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pafka.control.messages import LiveBroker, PartitionInfo, UpdateMetadata


@dataclass
class MetadataCache:
    controller_id: int = -1
    brokers: dict[int, LiveBroker] = field(default_factory=dict)
    topics: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    # Set once the first UpdateMetadata arrived: until then the broker is not ready.
    initialized: bool = False

    def apply(self, update: UpdateMetadata) -> None:
        self.controller_id = update.controller_id
        self.brokers = {b.id: b for b in update.live_brokers}
        if update.full:
            self.topics = {}
            self.topic_ids = {}
        for topic in update.deleted_topics:
            self.topics.pop(topic, None)
            self.topic_ids.pop(topic, None)
        for info in update.partitions:
            self.topics.setdefault(info.topic, {})[info.partition] = info
            self.topic_ids[info.topic] = info.topic_id
        self.initialized = True

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.topics.get(topic, {}).get(partition)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for name, tid in self.topic_ids.items():
            if tid == topic_id:
                return name
        return None

    def leader_of(self, topic: str, partition: int) -> LiveBroker | None:
        info = self.partition(topic, partition)
        if info is None:
            return None
        return self.brokers.get(info.leader)
