"""Leader election, Kafka's PartitionLeaderElectionAlgorithms, as pure functions.

The first replica in assignment order that is eligible wins, so leadership drifts back to the
preferred (first) replica whenever it can, and every broker computes the same answer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Election:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_partition_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int], unclean_enabled: bool
) -> Election | None:
    """A leader for a partition whose leader is gone; None leaves the partition offline."""
    live_isr = tuple(b for b in isr if b in live)
    for broker in assignment:
        if broker in live and broker in isr:
            return Election(broker, live_isr)
    if unclean_enabled:
        for broker in assignment:
            if broker in live:
                return Election(broker, (broker,), unclean=True)
    return None


def reassigned_partition_leader(
    target: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election | None:
    for broker in target:
        if broker in live and broker in isr:
            return Election(broker, tuple(isr))
    return None


def preferred_replica_leader(
    assignment: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> Election | None:
    """The first assigned replica, if it is alive and in sync."""
    if assignment and assignment[0] in live and assignment[0] in isr:
        return Election(assignment[0], tuple(isr))
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> Election | None:
    """A leader that is not shutting down; the ISR loses the brokers that are."""
    remaining = tuple(b for b in isr if b not in shutting_down)
    for broker in assignment:
        if broker in live and broker in isr and broker not in shutting_down:
            return Election(broker, remaining)
    return None


def isr_without(isr: Sequence[int], dead: Collection[int]) -> tuple[int, ...]:
    """The ISR after ``dead`` brokers leave it, never empty: Kafka keeps the last member so
    that it is known which replica held the latest data when the partition went offline."""
    remaining = tuple(b for b in isr if b not in dead)
    return remaining if remaining else tuple(isr[:1])


def preferred_imbalance(
    leaders: Mapping[tuple[str, int], tuple[int, Sequence[int]]],
) -> dict[int, float]:
    """Per preferred broker, the share of its partitions led by someone else.

    ``leaders`` maps partition -> (current leader, assignment). The controller moves leadership
    back when a broker's ratio passes 10%.
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
    return {b: off.get(b, 0) / n for b, n in total.items()}
