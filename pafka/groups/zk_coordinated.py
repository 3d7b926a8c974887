"""Groups whose clients coordinate themselves through ZooKeeper, as the seeds describe.

Kafka 0.8's high-level consumer and pykafka's BalancedConsumer (``managed=False``) register
ephemeral ``ids/{consumer}`` nodes, agree on an assignment among themselves and claim each
partition with an ephemeral ``owners/{topic}/{p}`` node holding a consumer-thread id
(``{consumer id}-{n}``). The broker takes no part in that; it serves such a group's offsets,
lists and describes it, and refuses Kafka-protocol members that would take its partitions.

Described as Kafka's admin client reads a group of protocol type "" (a "simple" consumer group,
whose member assignments are still decoded when present): state Stable while any consumer is
registered, each member with the partitions it owns as a consumer-protocol assignment. Kafka
itself would say Empty, knowing nothing of them; saying Stable with members makes
``kafka-consumer-groups.sh --describe`` and ``pafka groups describe`` show who consumes what,
and makes offset resets (which need an inactive group) refuse to move positions under them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.errors import InconsistentGroupProtocolError
from pafka.groups.consumer_protocol import Assignment, TopicPartition, encode_assignment
from pafka.zk.payload_fields import INT32_MAX, is_decimal
from pafka.zk.znodes import ZkConsumerRegistration

# Kafka lists a group it holds only offsets for with protocol type "", and its admin client
# treats "" as a simple consumer group.
PROTOCOL_TYPE = ""
# What DescribeGroups reports as the protocol: the assignment happened in ZooKeeper.
PROTOCOL = "zookeeper"
STATE = "Stable"


@dataclass(frozen=True)
class ZkConsumers:
    """The ZooKeeper-coordinated clients of a group: registrations and what they own."""

    members: dict[str, ZkConsumerRegistration]
    # partition -> consumer-thread id, as those clients write it
    owners: dict[TopicPartition, str]

    def __bool__(self) -> bool:
        return bool(self.members)

    def owner_of(self, thread_id: str) -> str | None:
        """The registered consumer whose thread ``{consumer id}-{n}`` this is."""
        for consumer in sorted(self.members, key=len, reverse=True):
            if thread_id == consumer or thread_id.startswith(f"{consumer}-"):
                return consumer
        return None

    def owned(self) -> dict[str, frozenset[TopicPartition]]:
        """Each registered consumer's partitions (owners of unregistered threads left out)."""
        found: dict[str, set[TopicPartition]] = {m: set() for m in self.members}
        for tp, thread in self.owners.items():
            consumer = self.owner_of(thread)
            if consumer is not None:
                found[consumer].add(tp)
        return {m: frozenset(tps) for m, tps in found.items()}

    def assignments(self) -> dict[str, bytes]:
        """Each consumer's partitions as a consumer-protocol assignment (for DescribeGroups)."""
        return {
            m: encode_assignment(Assignment(tps, b"")) for m, tps in sorted(self.owned().items())
        }


def partition_number(name: str, *, broker_prefixed: bool = False) -> int | None:
    """The partition a child of ``offsets/{topic}/`` or ``owners/{topic}/`` names: ``{p}`` as
    Kafka 0.8 writes both; with ``broker_prefixed`` (owners only) also ``{broker}-{p}``, as
    Kafka 0.7 (the seeds) and pykafka's BalancedConsumer name owners. None for anything else.
    """
    broker, dash, number = name.rpartition("-")
    if not dash:
        number = name
    elif not broker_prefixed or not is_decimal(broker) or broker.startswith("-"):
        return None
    if not is_decimal(number) or number.startswith("-") or int(number) > INT32_MAX:
        return None
    return int(number)


def client_host(consumer_id: str, group: str) -> str:
    """Where a consumer runs, from its id, the only place such clients record it: Kafka 0.8
    names a consumer ``{group}_{host}-{start ms}-{uuid prefix}``, pykafka ``{host}:{uuid}``."""
    rest = consumer_id.removeprefix(f"{group}_")
    parts = rest.rsplit("-", 2)
    if rest != consumer_id and len(parts) == 3 and parts[1].isdigit():
        return f"/{parts[0]}"
    host, colon, _ = consumer_id.partition(":")
    return f"/{host}" if colon and host else ""


def refuse_join(group: str, consumers: ZkConsumers) -> InconsistentGroupProtocolError:
    """The error for a Kafka-protocol JoinGroup of a group its clients coordinate through
    ZooKeeper: joining would take partitions they own without their knowing."""
    return InconsistentGroupProtocolError(
        f"group {group!r} is coordinated through ZooKeeper by {len(consumers.members)} "
        "registered consumer(s) (Kafka 0.8 style); a Kafka-protocol member cannot join it"
    )
