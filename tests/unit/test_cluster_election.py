"""Leader election algorithms (Kafka's PartitionLeaderElectionAlgorithms) and ISR rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.election import (
    Election,
    ElectionResult,
    controlled_shutdown_leader,
    imbalanced_brokers,
    isr_after_broker_failure,
    isr_without,
    new_partition_leader,
    offline_partition_leader,
    preferred_imbalance,
    preferred_replica_leader,
    reassign_partition_leader,
)

assignments = st.lists(st.integers(0, 6), min_size=1, max_size=5, unique=True)
broker_sets = st.sets(st.integers(0, 6))


def test_controller_name_is_the_same_class() -> None:
    assert Election is ElectionResult
    assert isr_without is isr_after_broker_failure


def test_new_partition() -> None:
    assert new_partition_leader([3, 1, 2], {1, 2}) == ElectionResult(1, (1, 2))
    assert new_partition_leader([3], set()) is None


def test_offline_election_prefers_assignment_order_within_the_isr() -> None:
    assert offline_partition_leader([1, 2, 3], [3, 2], {2, 3}, False) == ElectionResult(2, (3, 2))
    assert offline_partition_leader([1, 2, 3], [1], {2, 3}, False) is None
    unclean = offline_partition_leader([1, 2, 3], [1], {2, 3}, True)
    assert unclean == ElectionResult(2, (2,), unclean=True)
    # Clean election wins over unclean even when unclean is enabled.
    assert offline_partition_leader([1, 2, 3], [3], {2, 3}, True) == ElectionResult(3, (3,))


@given(assignment=assignments, isr_mask=st.lists(st.booleans(), min_size=5, max_size=5),
       live=broker_sets, unclean=st.booleans())  # fmt: skip
def test_offline_election_properties(
    assignment: list[int], isr_mask: list[bool], live: set[int], unclean: bool
) -> None:
    isr = [b for b, inside in zip(assignment, isr_mask, strict=False) if inside]
    result = offline_partition_leader(assignment, isr, live, unclean)
    clean_candidates = [b for b in assignment if b in live and b in isr]
    if clean_candidates:
        assert result == ElectionResult(clean_candidates[0], tuple(b for b in isr if b in live))
    elif unclean and set(assignment) & live:
        first_live = next(b for b in assignment if b in live)
        assert result == ElectionResult(first_live, (first_live,), unclean=True)
    else:
        assert result is None
    if result is not None:
        # The leader is live, assigned and in the new ISR, which holds only live brokers.
        assert result.leader in live and result.leader in assignment
        assert result.leader in result.isr and set(result.isr) <= live


def test_reassignment_keeps_the_isr() -> None:
    assert reassign_partition_leader([4, 5], [1, 5, 4], {4, 5}) == ElectionResult(4, (1, 5, 4))
    assert reassign_partition_leader([4, 5], [1, 5, 4], {5}) == ElectionResult(5, (1, 5, 4))
    assert reassign_partition_leader([4, 5], [1], {4, 5}) is None


def test_preferred_replica_only_when_live_and_in_sync() -> None:
    assert preferred_replica_leader([1, 2], [2, 1], {1, 2}) == ElectionResult(1, (2, 1))
    assert preferred_replica_leader([1, 2], [2], {1, 2}) is None
    assert preferred_replica_leader([1, 2], [1, 2], {2}) is None
    assert preferred_replica_leader([], [1], {1}) is None


def test_controlled_shutdown() -> None:
    got = controlled_shutdown_leader([1, 2, 3], [1, 2, 3], {1, 2, 3}, {1})
    assert got == ElectionResult(2, (2, 3))
    assert controlled_shutdown_leader([1], [1], {1}, {1}) is None
    assert controlled_shutdown_leader([1, 2], [1], {1, 2}, {1}) is None  # 2 is not in sync


@given(assignment=assignments, isr_mask=st.lists(st.booleans(), min_size=5, max_size=5),
       live=broker_sets, stopping=broker_sets)  # fmt: skip
def test_controlled_shutdown_properties(
    assignment: list[int], isr_mask: list[bool], live: set[int], stopping: set[int]
) -> None:
    isr = [b for b, inside in zip(assignment, isr_mask, strict=False) if inside]
    result = controlled_shutdown_leader(assignment, isr, live, stopping)
    eligible = [b for b in assignment if b in live and b in isr and b not in stopping]
    if not eligible:
        assert result is None
        return
    assert result is not None and result.leader == eligible[0]
    assert not set(result.isr) & stopping and result.leader in result.isr


def test_isr_never_empties() -> None:
    assert isr_after_broker_failure([1, 2], {1}) == (2,)
    assert isr_after_broker_failure([1, 2, 3], {3}) == (1, 2)
    # All gone: one member stays, the leader if it was in the ISR, else the first.
    assert isr_after_broker_failure([1, 2], {1, 2}) == (1,)
    assert isr_after_broker_failure([1, 2], {1, 2}, leader=2) == (2,)
    assert isr_after_broker_failure([1, 2], {1, 2}, leader=7) == (1,)
    assert isr_after_broker_failure([], {1}) == ()


@given(isr=st.lists(st.integers(0, 6), max_size=5, unique=True), dead=broker_sets,
       leader=st.none() | st.integers(0, 6))  # fmt: skip
def test_isr_after_failure_properties(isr: list[int], dead: set[int], leader: int | None) -> None:
    got = isr_after_broker_failure(isr, dead, leader)
    assert set(got) <= set(isr)
    assert bool(got) == bool(isr)  # never empties a non-empty ISR
    survivors = [b for b in isr if b not in dead]
    assert list(got) == survivors or (not survivors and len(got) == 1)


def test_preferred_imbalance() -> None:
    ratios = preferred_imbalance(
        {("t", 0): (2, [1, 2]), ("t", 1): (1, [1, 2]), ("t", 2): (2, [2, 1]), ("t", 3): (-1, [])}
    )
    assert ratios == {1: 0.5, 2: 0.0}
    assert imbalanced_brokers(ratios) == {1}
    assert imbalanced_brokers({1: 0.10, 2: 0.11}) == {2}  # strictly above the threshold
    assert imbalanced_brokers({1: 0.5}, threshold=0.5) == set()
