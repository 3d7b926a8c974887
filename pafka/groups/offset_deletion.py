"""Which committed offsets OffsetDelete (Kafka 2.4+, KIP-496) may remove: a pure decision.

An Empty group's offsets may all go. A consumer group that is rebalancing or Stable keeps the
offsets of topics its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for those partitions);
the rest may go. A group of another protocol type with members refuses as a whole
(NON_EMPTY_GROUP), and a Dead group is not found (GROUP_ID_NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Iterable

from pafka.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    KafkaApiError,
    NonEmptyGroupError,
)
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.state import GroupState


def deletable_offsets(
    group: str,
    state: GroupState,
    consumer_group: bool,
    subscribed: frozenset[str] | None,
    partitions: Iterable[TopicPartition],
) -> dict[TopicPartition, KafkaApiError | None]:
    """Per partition: None (delete it) or the error to answer. ``subscribed`` None means
    every topic (members whose subscription is a pattern). Raises the whole-group error."""
    wanted = sorted(set(partitions))
    if state is GroupState.DEAD:
        raise GroupIdNotFoundError(f"group {group!r} does not exist")
    if state is GroupState.EMPTY:
        return dict.fromkeys(wanted)
    if not consumer_group:
        raise NonEmptyGroupError(f"group {group!r} has members")
    return {
        tp: GroupSubscribedToTopicError(f"group {group!r} consumes {tp[0]!r}")
        if subscribed is None or tp[0] in subscribed
        else None
        for tp in wanted
    }
