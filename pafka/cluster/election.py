"""Leader election, Kafka's ``PartitionLeaderElectionAlgorithms``, as pure functions.

Every algorithm scans the assignment in order and takes the first eligible replica, so leadership
goes back to the preferred (first) replica whenever it can and every caller computes the same
answer. ``None`` means no replica is eligible: the partition stays (or goes) offline.

- new partition: the first live replica leads; the ISR is the live replicas.
- offline (leader died): the first live replica in the ISR; the ISR keeps its live members.
  With unclean election enabled and no such replica: the first live replica, ISR just itself
  (records it never received are lost).
- reassignment: the first live target replica in the ISR; the ISR is unchanged.
- preferred replica: the first replica, only if live and in the ISR; the ISR is unchanged.
- controlled shutdown: the first live ISR replica not shutting down; the ISR loses the brokers
  that are shutting down.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

NO_LEADER = -1


@dataclass(frozen=True)
class ElectionResult:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


Election = ElectionResult
"""The name the controller uses; the same class."""


def new_partition_leader(assignment: Sequence[int], live: Collection[int]) -> ElectionResult | None:
    """Leader and ISR of a partition being created: the live replicas, first one leads."""
    alive = tuple(b for b in assignment if b in live)
    return ElectionResult(alive[0], alive) if alive else None


def offline_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], unclean_enabled: bool
) -> ElectionResult | None:
    """A leader for a partition whose leader is gone.

    Clean: the first replica in assignment order that is live and in the ISR; the ISR keeps its
    live members. Unclean (only if enabled): the first live replica at all, with an ISR of just
    itself, since nothing else is known to match its log.
    """
    for broker in assignment:
        if broker in live and broker in isr:
            return ElectionResult(broker, tuple(b for b in isr if b in live))
    if unclean_enabled:
        for broker in assignment:
            if broker in live:
                return ElectionResult(broker, (broker,), unclean=True)
    return None


def reassign_partition_leader(
    target: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> ElectionResult | None:
    """A leader among the reassignment's target replicas; the ISR is left as it is."""
    for broker in target:
        if broker in live and broker in isr:
            return ElectionResult(broker, tuple(isr))
    return None


reassigned_partition_leader = reassign_partition_leader


def preferred_replica_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> ElectionResult | None:
    """The first assigned replica, only if it is live and in the ISR; the ISR is unchanged."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return ElectionResult(assignment[0], tuple(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> ElectionResult | None:
    """A leader that is not shutting down; the ISR loses the brokers that are."""
    for broker in assignment:
        if broker in live and broker in isr and broker not in shutting_down:
            return ElectionResult(broker, tuple(b for b in isr if b not in shutting_down))
    return None


def isr_after_broker_failure(
    isr: Sequence[int], dead: Collection[int], leader: int | None = None
) -> tuple[int, ...]:
    """The ISR once ``dead`` brokers are removed from it; never empty.

    Kafka's controller (``removeReplicasFromIsr``) takes dead replicas out of the ISR one by one
    but never shrinks an ISR of one: the last member stays, even though it is dead, so that the
    ISR still names the replica that held the latest committed data when the partition went
    offline, and a clean election can resume when that broker returns. Which member survives
    when all of them die at once depends on Kafka's removal order; here it is deterministic: the
    leader (``leader``, when it was in the ISR), otherwise the first member in ISR order.
    """
    remaining = tuple(b for b in isr if b not in dead)
    if remaining or not isr:
        return remaining
    if leader is not None and leader in isr:
        return (leader,)
    return (isr[0],)


isr_without = isr_after_broker_failure


def preferred_imbalance(
    leaders: Mapping[K, tuple[int, Sequence[int]]],
) -> dict[int, float]:
    """Per preferred broker, the share of the partitions it should lead that others lead.

    ``leaders`` maps any partition key -> (current leader, assignment). Kafka's
    ``checkAndTriggerAutoLeaderRebalance``: a broker whose ratio passes
    ``leader.imbalance.per.broker.percentage`` (10% by default) gets its partitions moved back.
    Partitions with an empty assignment are ignored.
    """
    total: dict[int, int] = {}
    off: dict[int, int] = {}
    for leader, assignment in leaders.values():
        if not assignment:
            continue
        preferred = assignment[0]
        total[preferred] = total.get(preferred, 0) + 1
        if leader != preferred:
            off[preferred] = off.get(preferred, 0) + 1
    return {b: off.get(b, 0) / count for b, count in total.items()}


def imbalanced_brokers(ratios: Mapping[int, float], threshold: float = 0.10) -> set[int]:
    """Brokers whose imbalance ratio is strictly above ``threshold``."""
    return {b for b, r in ratios.items() if r > threshold}
