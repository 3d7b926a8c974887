"""The whole "consumer" protocol round for a member that subscribes to topics.

:func:`join_consumer` joins through :class:`pafka.client.groups.GroupClient` (with the
MEMBER_ID_REQUIRED round trip), computes the assignment with :mod:`pafka.groups.assignors` when
elected leader (:func:`leader_assignments`), syncs, and rejoins while the group keeps
rebalancing. Members of any Kafka client announcing the same assignor name can share the group.
The assignors here are eager: a member that rejoins has given up everything it held (the
coordinator releases it), and it reports no owned partitions, so ``sticky`` is balanced and keeps
what members of other clients report holding, not what this member held.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pafka.client.cluster import ClusterClient
from pafka.client.groups import PARKED_MARGIN_S, GroupClient, JoinedMember
from pafka.errors import ConfigError, IllegalGenerationError, RebalanceInProgressError
from pafka.groups import assignors
from pafka.groups.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pafka.groups.kafka_python_assignors import decode_sticky_user_data, newest_claims

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerMembership:
    """A consumer member's place in the group after a completed join and sync."""

    member_id: str
    generation: int
    protocol: str
    leader: str
    partitions: frozenset[TopicPartition]

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader


async def join_consumer(
    groups: GroupClient,
    group: str,
    topics: Iterable[str],
    *,
    assignor: str = "range",
    member_id: str = "",
    instance_id: str | None = None,
    session_timeout_ms: int = 30_000,
    rebalance_timeout_ms: int | None = None,
    max_rounds: int = 5,
) -> ConsumerMembership:
    """Join (or rejoin, with ``member_id``) as a consumer subscribed to ``topics`` and
    return once the group's assignment reached this member.

    If another rebalance starts before the sync completes, the member joins again, up to
    ``max_rounds`` times (then RebalanceInProgressError). An eager member: whatever it held
    before is released by rejoining.
    """
    if assignor not in assignors.ASSIGNORS:
        known = ", ".join(sorted(assignors.ASSIGNORS))
        raise ConfigError(f"unknown partition assignor {assignor!r} (known: {known})")
    metadata = encode_subscription(Subscription(tuple(sorted(set(topics)))))
    rebalance_ms = session_timeout_ms if rebalance_timeout_ms is None else rebalance_timeout_ms
    for _ in range(max_rounds):
        joined = await groups.join(
            group,
            [(assignor, metadata)],
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            instance_id=instance_id,
        )
        member_id = joined.member_id
        protocol = joined.protocol or assignor
        assignments: dict[str, bytes] = {}
        if joined.is_leader:
            counts = await partition_counts(
                groups.cluster,
                (t for m in joined.members for t in decode_subscription(m.metadata).topics),
            )
            assignments = leader_assignments(protocol, joined.members, counts)
        try:
            raw = await groups.sync(
                group,
                joined.generation,
                member_id,
                assignments=assignments,
                instance_id=instance_id,
                protocol=protocol,
                timeout_s=rebalance_ms / 1000 + PARKED_MARGIN_S,
            )
        except (RebalanceInProgressError, IllegalGenerationError) as exc:
            log.debug("group %r: %s; joining again", group, exc)
            continue
        return ConsumerMembership(
            member_id=member_id,
            generation=joined.generation,
            protocol=protocol,
            leader=joined.leader,
            partitions=decode_assignment(raw).partitions,
        )
    raise RebalanceInProgressError(f"group {group!r} kept rebalancing; join again")


async def partition_counts(cluster: ClusterClient, topics: Iterable[str]) -> dict[str, int]:
    """Partition counts of the existing ``topics``, from fresh metadata."""
    wanted = sorted(set(topics))
    if not wanted:
        return {}
    await cluster.refresh(wanted)
    known = cluster.topics
    return {t: len(known[t].partitions) for t in wanted if t in known and known[t].partitions}


def leader_assignments(
    protocol: str, members: Sequence[JoinedMember], partition_counts: Mapping[str, int]
) -> dict[str, bytes]:
    """What the leader sends in SyncGroup: each member's consumer-protocol assignment under
    the assignor named ``protocol``, from every member's subscription.

    For ``sticky``, what each member held comes from Kafka's sticky user data or the owned
    partitions of a v1+ subscription; a partition claimed in an older generation is dropped.
    """
    decoded = {m.member_id: decode_subscription(m.metadata) for m in members}
    owned: dict[str, frozenset[TopicPartition]] = {}
    if protocol == "sticky":
        claims = {}
        for member_id, sub in decoded.items():
            claim = decode_sticky_user_data(sub.user_data)
            claims[member_id] = claim or (sub.owned_partitions, sub.generation_id)
        owned = newest_claims(claims)
    subscriptions = [
        assignors.MemberSubscription(
            member_id=m.member_id,
            topics=frozenset(decoded[m.member_id].topics),
            owned=owned.get(m.member_id, frozenset()),
            instance_id=m.instance_id,
        )
        for m in members
    ]
    decided = assignors.assign(protocol, subscriptions, partition_counts)
    return {
        member_id: encode_assignment(Assignment(partitions))
        for member_id, partitions in decided.items()
    }
