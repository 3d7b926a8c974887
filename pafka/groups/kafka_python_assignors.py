"""pafka's assignors inside kafka-python's consumer: the one adapter between the two.

kafka-python's group coordinator asks every configured assignor for the metadata its member sends
in JoinGroup (``metadata(topics)``); the member elected leader calls ``assign(cluster, members)``
with each member's decoded ``ConsumerProtocolSubscription``; every member then hears its share
through ``on_assignment``. These classes only convert: :mod:`pafka.groups.assignors` decides.
Their names are Kafka's protocol names, so pafka consumers share a group with Java, librdkafka
and kafka-python members that use the same strategy::

    KafkaConsumer(..., partition_assignment_strategy=[PafkaStickyAssignor()])

Sticky user data is Kafka's StickyAssignorUserData, written as the Java client and librdkafka
write it, with no version prefix (layout v1; v0 lacks the generation)::

    previous_assignment  [topic string, partitions [int32]]
    generation           int32      the generation that assignment was made in

kafka-python 3.0.12's own sticky assignor puts an int16 version in front; that form is read too,
as a last resort (a prefixed payload cannot pass for a plain one: its topic count would be at
least 65536). User data that cannot be read costs stickiness, never the rebalance, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from pafka.groups import assignors
from pafka.groups.assignors import MemberSubscription, TopicPartition

NO_GENERATION = -1

_CONSUMER_PROTOCOL_VERSION = 0
# Tried in order: (schema version, whether a version prefix precedes the struct).
_USER_DATA_LAYOUTS = ((1, False), (0, False), (None, True))


class ClusterView(Protocol):
    """The part of kafka-python's ``ClusterMetadata`` an assignor reads."""

    def partitions_for_topic(self, topic: str) -> set[int] | None: ...


class JoinedMember(Protocol):
    """kafka-python's ``JoinGroupResponseMember`` with its metadata already decoded."""

    member_id: str
    group_instance_id: str | None
    metadata: Any  # ConsumerProtocolSubscription


Claim = tuple[frozenset[TopicPartition], int]
"""Partitions a member says it held, and the generation it held them in."""


def _by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _flatten(topic_partitions: Iterable[Any] | None) -> frozenset[TopicPartition]:
    return frozenset(
        (entry.topic, partition)
        for entry in topic_partitions or ()
        for partition in entry.partitions or ()
    )


def encode_sticky_user_data(previous: Iterable[TopicPartition], generation: int) -> bytes:
    """StickyAssignorUserData v1 as Java and librdkafka write it."""
    data = StickyAssignorUserData(
        previous_assignment=_by_topic(previous), generation=generation, version=1
    )
    return data.encode(header=False)


def decode_sticky_user_data(user_data: object) -> Claim | None:
    """The previous assignment and its generation, or None when absent or unreadable."""
    if not isinstance(user_data, bytes | bytearray | memoryview) or not user_data:
        return None
    for version, prefixed in _USER_DATA_LAYOUTS:
        try:
            decoded = StickyAssignorUserData.decode(
                bytes(user_data), version=version, header=prefixed
            )
            previous = _flatten(decoded.previous_assignment)
        except Exception:  # another client's bytes: any failure means "not this layout"
            continue
        return previous, decoded.generation
    return None


def newest_claims(claims: Mapping[str, Claim]) -> dict[str, frozenset[TopicPartition]]:
    """What each member owned, where a partition claimed in an older generation is dropped.

    A member that missed a rebalance still reports what it held before it; the claim from the
    newest generation is the one that stands. Claims from the same generation are left to the
    assignor's own tie-break.
    """
    newest: dict[TopicPartition, int] = {}
    for owned, generation in claims.values():
        for tp in owned:
            newest[tp] = max(newest.get(tp, generation), generation)
    return {
        member_id: frozenset(tp for tp in owned if newest[tp] == generation)
        for member_id, (owned, generation) in claims.items()
    }


def _partition_counts(cluster: ClusterView, topics: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic in topics:
        partitions = cluster.partitions_for_topic(topic)
        # No metadata yet: the topic is treated as not created; the leader rebalances once it is.
        if partitions:
            counts[topic] = len(partitions)
    return counts


class _PafkaAssignor(AbstractPartitionAssignor):
    """Runs the pure assignor whose protocol name is this class's ``name``."""

    name: str

    def assign(self, cluster: ClusterView, members: Sequence[JoinedMember]) -> dict[str, Any]:
        owned = self._owned(members)
        subscriptions = [
            MemberSubscription(
                member_id=m.member_id,
                topics=frozenset(m.metadata.topics),
                owned=owned.get(m.member_id, frozenset()),
                instance_id=m.group_instance_id,
            )
            for m in members
        ]
        topics = {t for s in subscriptions for t in s.topics}
        decided = assignors.assign(self.name, subscriptions, _partition_counts(cluster, topics))
        return {
            member_id: ConsumerProtocolAssignment(
                version=_CONSUMER_PROTOCOL_VERSION,
                assigned_partitions=_by_topic(partitions),
                user_data=None,
            )
            for member_id, partitions in decided.items()
        }

    def metadata(self, topics: Iterable[str]) -> Any:
        return ConsumerProtocolSubscription(
            version=_CONSUMER_PROTOCOL_VERSION, topics=sorted(topics), user_data=self._user_data()
        )

    def on_assignment(self, assignment: Any, generation: int) -> None:
        pass

    def _owned(self, members: Sequence[JoinedMember]) -> dict[str, frozenset[TopicPartition]]:
        return {}

    def _user_data(self) -> bytes | None:
        return None


class PafkaRangeAssignor(_PafkaAssignor):
    name = "range"


class PafkaRoundRobinAssignor(_PafkaAssignor):
    name = "roundrobin"


class PafkaStickyAssignor(_PafkaAssignor):
    """Remembers its member's last assignment and reports it in the next JoinGroup.

    One instance per consumer: it holds that consumer's state.
    """

    name = "sticky"

    def __init__(self) -> None:
        self._previous: frozenset[TopicPartition] | None = None
        self._generation = NO_GENERATION

    def on_assignment(self, assignment: Any, generation: int) -> None:
        self._previous = frozenset((tp.topic, tp.partition) for tp in assignment.partitions())
        self._generation = generation

    def _user_data(self) -> bytes | None:
        if self._previous is None:
            return None
        return encode_sticky_user_data(self._previous, self._generation)

    def _owned(self, members: Sequence[JoinedMember]) -> dict[str, frozenset[TopicPartition]]:
        return newest_claims({m.member_id: _claim(m.metadata) for m in members})


def _claim(subscription: Any) -> Claim:
    """A member's sticky user data, else the owned partitions of a v1+ subscription."""
    decoded = decode_sticky_user_data(subscription.user_data)
    if decoded is not None:
        return decoded
    return _flatten(subscription.owned_partitions), subscription.generation_id
