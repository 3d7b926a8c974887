"""Replica assignment: Kafka's placements, and the properties that make them good."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.assignment import (
    BrokerMeta,
    add_partitions,
    assign_replicas,
    rack_alternated,
    validate_manual_assignment,
)
from pafka.errors import (
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)


def brokers(n: int, racks: int = 0) -> list[BrokerMeta]:
    return [BrokerMeta(i, f"r{i % racks}" if racks else None) for i in range(n)]


def test_kafkas_placement_for_five_brokers() -> None:
    # The example from Kafka's AdminUtils documentation: 5 brokers, 10 partitions, RF 3,
    # start index 0, shift 0.
    got = assign_replicas(brokers(5), 10, 3, start_index=0, replica_shift=0)
    assert got[0] == (0, 1, 2)
    assert got[1] == (1, 2, 3)
    assert got[4] == (4, 0, 1)
    # After wrapping past n, the shift grows: followers move one broker further.
    assert got[5] == (0, 2, 3)
    assert got[9] == (4, 1, 2)


def test_rack_alternated_order() -> None:
    bs = [
        BrokerMeta(0, "a"),
        BrokerMeta(1, "a"),
        BrokerMeta(2, "b"),
        BrokerMeta(3, "c"),
        BrokerMeta(4, "c"),
    ]
    assert rack_alternated(bs) == [0, 2, 3, 1, 4]


@given(
    n=st.integers(min_value=1, max_value=9),
    partitions=st.integers(min_value=1, max_value=60),
    data=st.data(),
)
def test_every_partition_gets_distinct_brokers_and_leaders_spread(
    n: int, partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(min_value=1, max_value=n))
    seed = data.draw(st.integers(min_value=0, max_value=2**32))
    got = assign_replicas(brokers(n), partitions, rf, rng=random.Random(seed))
    assert sorted(got) == list(range(partitions))
    for replicas in got.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= set(range(n))
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in range(n)]
    assert max(counts) - min(counts) <= 1
    replicas_per_broker = Counter(b for r in got.values() for b in r)
    counts = [replicas_per_broker.get(b, 0) for b in range(n)]
    assert max(counts) - min(counts) <= rf


@given(
    racks=st.integers(min_value=2, max_value=4),
    per_rack=st.integers(min_value=1, max_value=3),
    partitions=st.integers(min_value=1, max_value=30),
    data=st.data(),
)
def test_rack_aware_spreads_over_racks(
    racks: int, per_rack: int, partitions: int, data: st.DataObject
) -> None:
    bs = [BrokerMeta(r * 10 + i, f"rack{r}") for r in range(racks) for i in range(per_rack)]
    rf = data.draw(st.integers(min_value=1, max_value=len(bs)))
    got = assign_replicas(bs, partitions, rf, rng=random.Random(data.draw(st.integers(0, 999))))
    rack_of = {b.id: b.rack for b in bs}
    for replicas in got.values():
        assert len(set(replicas)) == rf
        assert len({rack_of[r] for r in replicas}) == min(rf, racks)


def test_errors() -> None:
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(brokers(2), 3, 3)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(brokers(2), 3, 0)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(brokers(2), 0, 1)
    with pytest.raises(InvalidReplicaAssignmentError):
        assign_replicas([BrokerMeta(0, "a"), BrokerMeta(1)], 1, 1)


def test_add_partitions_continues_the_pattern() -> None:
    existing = assign_replicas(brokers(3), 3, 2, start_index=1, replica_shift=0)
    added = add_partitions(existing, brokers(3), 6, rng=random.Random(1))
    assert sorted(added) == [3, 4, 5]
    assert [added[p][0] for p in (3, 4, 5)] == [existing[0][0], existing[1][0], existing[2][0]]
    with pytest.raises(InvalidPartitionsError):
        add_partitions(existing, brokers(3), 3)


def test_manual_assignment_validation() -> None:
    assert validate_manual_assignment({0: (1, 2), 1: (2, 1)}, {1, 2}) == {0: (1, 2), 1: (2, 1)}
    for bad in ({0: (1, 1)}, {0: (1, 9)}, {1: (1,)}, {0: (1,), 1: (1, 2)}, {}):
        with pytest.raises(InvalidReplicaAssignmentError):
            validate_manual_assignment(bad, {1, 2})
