"""Consumer-group partition assignors: which member of a group consumes which partitions.

The group leader runs one of these over every member's subscription and the partition count of
each subscribed topic, then sends each member its share. Plain values in, plain values out;
``kafka_python_assignors`` plugs them into kafka-python's consumer.

Members are ordered as Kafka orders them (KIP-345): static members (``group.instance.id``) first,
by instance id, then dynamic members by member id. The order decides range and roundrobin outright
and breaks every tie in sticky, so the result never depends on the order members are passed in.

* ``range`` (Kafka's RangeAssignor): per topic, ``n // c`` contiguous partitions to each of the
  ``c`` subscribed members, one more to each of the first ``n % c``.
* ``roundrobin`` (Kafka's RoundRobinAssignor): every subscribed partition sorted by (topic,
  partition), dealt to the members in a circle, passing over members not subscribed to its topic.
* ``sticky``: as balanced as the subscriptions allow, while moving as few owned partitions as that
  balance permits. Balanced means no chain of hand-overs (A takes a partition from B, B from C,
  ...) can take one partition from a member holding at least two more than the member that
  finally gains one. No assignment is more even than such a one (it is an optimal
  semi-matching); with identical subscriptions, counts are within one of each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import cycle, pairwise

from pafka.errors import ConfigError

TopicPartition = tuple[str, int]
Assignment = dict[str, frozenset[TopicPartition]]
"""Member id -> the partitions it is to consume; every member present, possibly with none."""


@dataclass(frozen=True)
class MemberSubscription:
    """What one member told the group when it joined."""

    member_id: str
    topics: frozenset[str]
    owned: frozenset[TopicPartition] = frozenset()
    """What the member holds now; only sticky reads it."""
    instance_id: str | None = None
    """``group.instance.id`` of a static member."""


AssignFn = Callable[[Sequence[MemberSubscription], Mapping[str, int]], Assignment]


def _order_key(member: MemberSubscription) -> tuple[bool, str, str]:
    # A static member that restarts gets a new member id but keeps its instance id, so sorting by
    # instance id keeps its place in the order, and with it its partitions.
    if member.instance_id is not None:
        return (False, member.instance_id, member.member_id)
    return (True, member.member_id, member.member_id)


def _ordered(members: Iterable[MemberSubscription]) -> list[MemberSubscription]:
    return sorted(members, key=_order_key)


def _subscribed_partitions(
    members: Iterable[MemberSubscription], partition_counts: Mapping[str, int]
) -> list[TopicPartition]:
    """Every partition some member subscribes to, sorted; topics without a count do not exist."""
    topics = {t for m in members for t in m.topics if t in partition_counts}
    return [(t, p) for t in sorted(topics) for p in range(partition_counts[t])]


def _frozen(assignment: Mapping[str, Iterable[TopicPartition]]) -> Assignment:
    return {member_id: frozenset(tps) for member_id, tps in assignment.items()}


def range_assign(
    members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]
) -> Assignment:
    """Kafka's RangeAssignor: contiguous ranges of each topic to its subscribers in order."""
    ordered = _ordered(members)
    result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
    for topic, count in partition_counts.items():
        subscribers = [m.member_id for m in ordered if topic in m.topics]
        if not subscribers:
            continue
        share, extra = divmod(count, len(subscribers))
        start = 0
        for index, member_id in enumerate(subscribers):
            end = start + share + (1 if index < extra else 0)
            result[member_id].extend((topic, p) for p in range(start, end))
            start = end
    return _frozen(result)


def round_robin_assign(
    members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]
) -> Assignment:
    """Kafka's RoundRobinAssignor: partitions dealt in a circle, skipping non-subscribers."""
    ordered = _ordered(members)
    result: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
    turn = cycle(ordered)
    # Only subscribed topics are dealt, so every search below finds a subscriber.
    for tp in _subscribed_partitions(ordered, partition_counts):
        member = next(turn)
        while tp[0] not in member.topics:
            member = next(turn)
        result[member.member_id].append(tp)
    return _frozen(result)


class _StickyPlan:
    """The sticky assignment under construction; :func:`sticky_assign` is its only user."""

    def __init__(
        self, members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]
    ) -> None:
        ordered = _ordered(members)
        self.ids = [m.member_id for m in ordered]
        self.rank = {member_id: i for i, member_id in enumerate(self.ids)}
        self.topics = {
            m.member_id: frozenset(t for t in m.topics if t in partition_counts) for m in ordered
        }
        self.partitions = _subscribed_partitions(ordered, partition_counts)
        # A partition claimed by two members goes to the first in member order.
        self.previous: dict[TopicPartition, str] = {}
        for m in ordered:
            for tp in sorted(m.owned):
                valid = tp[0] in self.topics[m.member_id] and 0 <= tp[1] < partition_counts[tp[0]]
                if valid:
                    self.previous.setdefault(tp, m.member_id)
        self.held: dict[str, set[TopicPartition]] = {member_id: set() for member_id in self.ids}
        for tp, owner in self.previous.items():
            self.held[owner].add(tp)

    def load(self, member_id: str) -> int:
        return len(self.held[member_id])

    def place_unowned(self) -> None:
        """Each partition nobody keeps goes to its least loaded subscriber.

        Partitions with the fewest possible takers go first, while those takers still have room.
        """
        topics = {t for t, _ in self.partitions}
        takers = {t: [i for i in self.ids if t in self.topics[i]] for t in topics}
        unowned = [tp for tp in self.partitions if tp not in self.previous]
        for tp in sorted(unowned, key=lambda tp: (len(takers[tp[0]]), tp)):
            member_id = min(takers[tp[0]], key=lambda i: (self.load(i), self.rank[i]))
            self.held[member_id].add(tp)

    def can_take(self, taker: str, giver: str) -> bool:
        return any(tp[0] in self.topics[taker] for tp in self.held[giver])

    def costs_a_move(self, tp: TopicPartition, giver: str) -> bool:
        """Whether handing ``tp`` on takes it from the member that owned it before."""
        return self.previous.get(tp) == giver

    def pick(self, giver: str, taker: str) -> TopicPartition:
        """What ``giver`` hands ``taker``: a partition going home, else one not the giver's own."""
        candidates = [tp for tp in self.held[giver] if tp[0] in self.topics[taker]]
        return max(
            candidates,
            key=lambda tp: (self.previous.get(tp) == taker, not self.costs_a_move(tp, giver), tp),
        )

    def improving_chain(self) -> list[str] | None:
        """Members ``[a, b, ..., z]``: ``a`` takes from ``b``, ..., so ``z`` gives one up.

        ``z`` holds at least two more than ``a``. Searched from the least loaded members first,
        breadth first from all of them at once, so the chain is the shortest from that load.
        """
        for level in sorted({self.load(i) for i in self.ids}):
            chain = self._chain_from([i for i in self.ids if self.load(i) == level], level + 2)
            if chain is not None:
                return chain
        return None

    def _chain_from(self, starts: list[str], end_load: int) -> list[str] | None:
        parent: dict[str, str] = {}
        seen = set(starts)
        layer = starts
        while layer:
            reached = []
            for taker in layer:
                for giver in self.ids:
                    if giver not in seen and self.can_take(taker, giver):
                        parent[giver] = taker
                        seen.add(giver)
                        reached.append(giver)
            ends = [g for g in reached if self.load(g) >= end_load]
            if ends:
                chain = [min(ends, key=lambda g: self._end_key(g, parent[g]))]
                while chain[-1] in parent:
                    chain.append(parent[chain[-1]])
                return chain[::-1]
            layer = reached
        return None

    def _end_key(self, giver: str, taker: str) -> tuple[int, bool, int]:
        # Among equally loaded givers, one that can hand over a partition it did not own before
        # lets the balance improve without a move.
        free = any(
            tp[0] in self.topics[taker] and not self.costs_a_move(tp, giver)
            for tp in self.held[giver]
        )
        return (-self.load(giver), not free, self.rank[giver])

    def shift(self, chain: Sequence[str]) -> None:
        for taker, giver in pairwise(chain):
            tp = self.pick(giver, taker)
            self.held[giver].remove(tp)
            self.held[taker].add(tp)


def sticky_assign(
    members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]
) -> Assignment:
    """Balanced as the subscriptions allow, keeping what members own where balance permits.

    Every member first keeps its owned partitions that are still valid (one claimed twice stays
    with the claimant first in member order), the rest go to the least loaded subscribers, then
    chains of hand-overs even out the counts. Each chain narrows the spread (the sum of squared
    counts falls), so this ends. Only the member at a chain's end holds fewer afterwards, and it
    held at least two more than the member at the start; members in between trade one partition
    for another, handing on one they did not own before where they can.
    """
    plan = _StickyPlan(members, partition_counts)
    plan.place_unowned()
    while (chain := plan.improving_chain()) is not None:
        plan.shift(chain)
    return _frozen(plan.held)


ASSIGNORS: Mapping[str, AssignFn] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
}
"""The assignors by the protocol names Kafka clients announce in JoinGroup."""


def assign(
    name: str, members: Sequence[MemberSubscription], partition_counts: Mapping[str, int]
) -> Assignment:
    """Run the assignor Kafka clients know as ``name``."""
    try:
        assignor = ASSIGNORS[name]
    except KeyError:
        known = ", ".join(sorted(ASSIGNORS))
        raise ConfigError(f"unknown partition assignor {name!r} (known: {known})") from None
    return assignor(members, partition_counts)
