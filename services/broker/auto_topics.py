"""Auto-creation of topics (Kafka's ``auto.create.topics.enable``) for Metadata requests.

As a Kafka 2.8 broker in ZooKeeper mode does, a Metadata request naming a missing topic (with
``allow_auto_topic_creation``, which requests before v4 imply) writes the topic to ZooKeeper
with the broker's ``num.partitions`` and ``default.replication.factor``, the path CreateTopics
takes, and the controller elects its leaders; until then the topic is answered
LEADER_NOT_AVAILABLE, which clients retry. Where Kafka refuses (INVALID_REPLICATION_FACTOR) a
default factor above the live brokers, pafka creates the topic with one replica per live broker
and logs one line saying so.
"""

from __future__ import annotations

import logging

from kazoo.client import KazooClient

from pafka.admin import topics as admin
from pafka.errors import LeaderNotAvailableError, PafkaError, TopicAlreadyExistsError
from pafka.zk.client import ZkClient

log = logging.getLogger(__name__)


def capped_replication_factor(default: int, live_brokers: int) -> int:
    """The factor an auto-created topic gets: the default, at most one replica per live broker
    (at least one, so the ZooKeeper write reports a cluster without brokers itself)."""
    return max(1, min(default, live_brokers))


def _create(zk: KazooClient, name: str, partitions: int, replication_factor: int) -> None:
    live = len(admin.live_brokers(zk))
    used = capped_replication_factor(replication_factor, live)
    admin.create_topic(zk, name, partitions, used, {})
    # Logged once created: a topic that already exists (another broker, an earlier request)
    # raised above, so each topic gets one line.
    if used < replication_factor:
        log.warning(
            "auto-created topic %s with replication factor %d: default.replication.factor %d "
            "is above the %d live brokers",
            name,
            used,
            replication_factor,
            live,
        )
    else:
        log.info("auto-created topic %s (replication factor %d)", name, used)


class TopicAutoCreator:
    """Creates missing topics, one ZooKeeper write per topic however many clients ask at once."""

    def __init__(self, zk: ZkClient, partitions: int, replication_factor: int) -> None:
        self.zk = zk
        self.partitions = partitions
        self.replication_factor = replication_factor
        self._in_flight: set[str] = set()

    async def create(self, name: str) -> PafkaError:
        """Create ``name``; the error its Metadata answer carries (LEADER_NOT_AVAILABLE while
        the controller elects leaders, or why the topic cannot be created)."""
        if name in self._in_flight:
            return LeaderNotAvailableError(f"topic {name} is being created")
        self._in_flight.add(name)
        try:
            await self.zk.run(
                _create, self.zk.kazoo, name, self.partitions, self.replication_factor
            )
        except TopicAlreadyExistsError:
            pass  # created meanwhile, or being deleted: Kafka answers as for a fresh topic
        except PafkaError as exc:
            return exc
        finally:
            self._in_flight.discard(name)
        return LeaderNotAvailableError(f"topic {name} has no leaders yet")
