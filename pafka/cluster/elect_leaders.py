"""ElectLeaders (KIP-460): the controller's answer for one partition, as a pure function.

PREFERRED moves leadership to the first assigned replica; it is not needed when that replica
leads already, and fails with PREFERRED_LEADER_NOT_AVAILABLE unless it is live and in the ISR.
UNCLEAN elects a leader for a partition without a live one, the first live replica of the ISR,
else the first live replica at all (losing what it never received), whatever the topic's
``unclean.leader.election.enable``; it is not needed while a live broker leads, and fails with
ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live. These are Kafka's checks and errors.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence

from pafka.cluster.election import (
    NO_LEADER,
    ElectionResult,
    offline_partition_leader,
    preferred_replica_leader,
)
from pafka.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    KafkaApiError,
    PreferredLeaderNotAvailableError,
)


class ElectionType(enum.IntEnum):
    """ElectLeaders ``election_type`` wire values (v0 requests are PREFERRED)."""

    PREFERRED = 0
    UNCLEAN = 1


def decide(
    kind: ElectionType,
    assignment: Sequence[int],
    leader: int,
    isr: Sequence[int],
    live: Collection[int],
) -> ElectionResult | KafkaApiError:
    """The new leader and ISR of one partition, or the error the response carries for it."""
    if kind is ElectionType.PREFERRED:
        if assignment and leader == assignment[0]:
            return ElectionNotNeededError("leader election not needed: the preferred replica leads")
        preferred = preferred_replica_leader(assignment, isr, live) if assignment else None
        if preferred is None:
            return PreferredLeaderNotAvailableError(
                f"the preferred replica {assignment[0] if assignment else NO_LEADER} is not "
                "live and in the ISR"
            )
        return preferred
    if leader != NO_LEADER and leader in live:
        return ElectionNotNeededError("leader election not needed: a live replica leads")
    elected = offline_partition_leader(assignment, isr, live, unclean_enabled=True)
    if elected is None:
        return EligibleLeadersNotAvailableError("no replica of the partition is live")
    return elected
