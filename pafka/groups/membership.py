"""One consumer group's membership as plain data, and the decisions made on it.

The coordinator (``services/broker/groups``) owns the clocks, the waiting requests and the
ZooKeeper writes; everything it decides about a group (who has joined, which protocol wins, who
leads, who timed out, which partitions a member may be handed) is decided here, from values.

Ownership follows the seeds: a partition has at most one owner, recorded in
``/consumers/{group}/owners``. A member keeps what it owns until it says it stopped: eager
members stop everything before they rejoin, cooperative ones list what they still hold. A
partition is handed to a member only once its previous owner let it go; until then it is
withheld and another rebalance follows, so no partition is ever consumed by two members.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.state import GroupState, group_transition

# Assignors whose members keep their partitions across a rebalance (KIP-429).
COOPERATIVE_PROTOCOLS = frozenset({"cooperative-sticky"})


@dataclass
class Member:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    instance_id: str | None = None
    # (protocol name, metadata) in the member's order of preference.
    protocols: tuple[tuple[str, bytes], ...] = ()
    subscription: frozenset[str] = frozenset()
    # What the member says it still holds (cooperative members, subscription v1+).
    reported_owned: frozenset[TopicPartition] = frozenset()
    assignment: bytes = b""
    last_heard_ms: int = 0
    awaiting_join: bool = False
    awaiting_sync: bool = False

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def expired(self, now_ms: int) -> bool:
        """A member with a request parked at the coordinator is alive by definition."""
        if self.awaiting_join or self.awaiting_sync:
            return False
        return now_ms > self.last_heard_ms + self.session_timeout_ms


@dataclass
class GroupMetadata:
    group_id: str
    state: GroupState = GroupState.EMPTY
    protocol_type: str | None = None
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED, not yet joined: id -> expiry (ms).
    pending_members: dict[str, int] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    # Partition counts of the subscribed topics when the generation began (to notice growth).
    partition_counts: dict[str, int] = field(default_factory=dict)

    # -- state -------------------------------------------------------------------------------

    def transition(self, target: GroupState) -> None:
        self.state = group_transition(self.state, target, self.group_id)

    @property
    def cooperative(self) -> bool:
        return self.protocol in COOPERATIVE_PROTOCOLS

    def member_by_instance(self, instance_id: str) -> Member | None:
        for member in self.members.values():
            if member.instance_id == instance_id:
                return member
        return None

    # -- joining -----------------------------------------------------------------------------

    def supports(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """Whether a member with these protocols can be in the group (Kafka's rule)."""
        names = set(protocols)
        if not names:
            return False
        if not any(m.protocols for m in self.members.values()):
            return True
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports; members loaded from ZooKeeper that have not
        rejoined yet (no protocols known) do not constrain the choice."""
        names: set[str] | None = None
        for member in self.members.values():
            if not member.protocols:
                continue
            mine = {name for name, _ in member.protocols}
            names = mine if names is None else names & mine
        return names or set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; most votes wins, then the name,
        so every coordinator picks the same one."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            choice = next((name for name, _ in member.protocols if name in candidates), None)
            if choice is not None:  # members that have not rejoined yet do not vote
                votes[choice] += 1
        if not votes:
            raise ValueError(f"no member of {self.group_id!r} has a protocol to vote for")
        return min(votes, key=lambda name: (-votes[name], name))

    def static_rejoin_keeps_generation(self) -> bool:
        """Whether a static member that came back (KIP-345) simply takes its old place: yes
        while the group is Stable and the protocol the group would now select is unchanged,
        whoever the member is (the leader too); its metadata may differ (what it reports
        owning is new), the assignment it gets back is its old one."""
        if self.state is not GroupState.STABLE or self.protocol is None:
            return False
        try:
            return self.select_protocol() == self.protocol
        except ValueError:
            return False

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_rejoined(self) -> list[str]:
        return [m.member_id for m in self.members.values() if not m.awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def choose_leader(self) -> str:
        if self.leader in self.members:
            return self.leader
        return next(iter(self.members))

    # -- liveness ----------------------------------------------------------------------------

    def expired_members(self, now_ms: int) -> list[str]:
        return [m.member_id for m in self.members.values() if m.expired(now_ms)]

    def expired_pending(self, now_ms: int) -> list[str]:
        return [member for member, deadline in self.pending_members.items() if now_ms > deadline]

    def subscribed_topics(self) -> set[str]:
        return set().union(*(m.subscription for m in self.members.values()))

    # -- ownership ---------------------------------------------------------------------------

    def owned_by(self, member_id: str) -> set[TopicPartition]:
        return {tp for tp, owner in self.owners.items() if owner == member_id}

    def released_on_join(self, member: Member) -> set[TopicPartition]:
        """What a (re)joining member has stopped consuming: everything for eager protocols,
        what it no longer reports for cooperative ones."""
        owned = self.owned_by(member.member_id)
        return owned if not self.cooperative else owned - member.reported_owned

    def stale_owners(self) -> set[TopicPartition]:
        """Ownership records of members that are gone (left while another coordinator held
        the group)."""
        return {tp for tp, owner in self.owners.items() if owner not in self.members}


def grant_ownership(
    assignments: Mapping[str, frozenset[TopicPartition]],
    owners: Mapping[TopicPartition, str],
    live_members: Iterable[str],
) -> tuple[dict[str, frozenset[TopicPartition]], bool]:
    """What each member may take of the leader's assignment, and whether anything was withheld.

    A partition still owned by another live member is withheld (it is released when that
    member rejoins without it); a partition the leader gave to several members goes to the
    first by member id. Withholding means another rebalance must follow.
    """
    live = set(live_members)
    granted: dict[str, frozenset[TopicPartition]] = {}
    taken: set[TopicPartition] = set()
    withheld = False
    for member in sorted(assignments):
        mine = set()
        for tp in sorted(assignments[member]):
            owner = owners.get(tp)
            if tp in taken or (owner is not None and owner != member and owner in live):
                withheld = True
                continue
            taken.add(tp)
            mine.add(tp)
        granted[member] = frozenset(mine)
    return granted, withheld
