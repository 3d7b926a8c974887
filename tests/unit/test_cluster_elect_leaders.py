"""ElectLeaders decisions (KIP-460) with Kafka's per-partition errors."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.elect_leaders import ElectionType, decide
from pafka.cluster.election import NO_LEADER, ElectionResult
from pafka.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    PreferredLeaderNotAvailableError,
)

assignments = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)
broker_sets = st.sets(st.integers(0, 5))


def test_preferred() -> None:
    moved = decide(ElectionType.PREFERRED, [1, 2, 3], 2, [1, 2, 3], {1, 2, 3})
    assert moved == ElectionResult(1, (1, 2, 3))
    assert isinstance(
        decide(ElectionType.PREFERRED, [1, 2], 1, [1, 2], {1, 2}), ElectionNotNeededError
    )
    assert isinstance(
        decide(ElectionType.PREFERRED, [1, 2], 2, [2], {1, 2}), PreferredLeaderNotAvailableError
    )
    assert isinstance(
        decide(ElectionType.PREFERRED, [1, 2], 2, [1, 2], {2}), PreferredLeaderNotAvailableError
    )


def test_unclean() -> None:
    assert isinstance(decide(ElectionType.UNCLEAN, [1, 2], 2, [2], {1, 2}), ElectionNotNeededError)
    # The ISR member is dead: the first live replica leads, alone in its ISR.
    elected = decide(ElectionType.UNCLEAN, [1, 2], NO_LEADER, [1], {2})
    assert elected == ElectionResult(2, (2,), unclean=True)
    clean = decide(ElectionType.UNCLEAN, [1, 2, 3], NO_LEADER, [3], {2, 3})
    assert clean == ElectionResult(3, (3,))
    assert isinstance(
        decide(ElectionType.UNCLEAN, [1, 2], NO_LEADER, [1], set()),
        EligibleLeadersNotAvailableError,
    )


@given(assignments, st.integers(-1, 5), broker_sets, broker_sets)
def test_an_elected_leader_is_always_a_live_assigned_replica(
    assignment: list[int], leader: int, isr: set[int], live: set[int]
) -> None:
    for kind in ElectionType:
        result = decide(kind, assignment, leader, sorted(isr), live)
        if isinstance(result, ElectionResult):
            assert result.leader in assignment and result.leader in live
            assert result.leader != leader
            assert result.leader in result.isr
        elif kind is ElectionType.UNCLEAN and not isinstance(result, ElectionNotNeededError):
            assert not (set(assignment) & live)
