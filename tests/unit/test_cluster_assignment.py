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


def per_broker(assignment: dict[int, tuple[int, ...]]) -> Counter[int]:
    return Counter(b for replicas in assignment.values() for b in replicas)


# -- golden placements from Kafka's AdminUtils documentation -------------------------------------


def test_kafkas_rack_unaware_example() -> None:
    # 5 brokers, 10 partitions, RF 3, fixed start index 0 (so the shift starts at 0 too).
    got = assign_replicas(brokers(5), 10, 3, start_index=0)
    assert got == {
        0: (0, 1, 2),
        1: (1, 2, 3),
        2: (2, 3, 4),
        3: (3, 4, 0),
        4: (4, 0, 1),
        # Wrapped past n: the shift grows, followers sit one broker further from the leader.
        5: (0, 2, 3),
        6: (1, 3, 4),
        7: (2, 4, 0),
        8: (3, 0, 1),
        9: (4, 1, 2),
    }


def test_kafkas_rack_aware_example() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    bs = [BrokerMeta(b, r) for b, r in racks.items()]
    assert rack_alternated(bs) == [0, 3, 1, 5, 4, 2]
    got = assign_replicas(bs, 7, 3, start_index=0)
    assert got == {
        0: (0, 3, 1),
        1: (3, 1, 5),
        2: (1, 5, 4),
        3: (5, 4, 2),
        4: (4, 2, 0),
        5: (2, 0, 3),
        6: (0, 4, 2),  # shifted, not a repeat of partition 0
    }


def test_rack_alternated_skips_exhausted_racks() -> None:
    bs = [BrokerMeta(0, "a"), BrokerMeta(1, "a"), BrokerMeta(2, "b"), BrokerMeta(3, "c")]
    bs += [BrokerMeta(4, "c"), BrokerMeta(5, "a")]
    assert rack_alternated(bs) == [0, 2, 3, 1, 4, 5]


# -- determinism ---------------------------------------------------------------------------------


def test_start_index_also_fixes_the_shift_as_in_kafka() -> None:
    a = assign_replicas(brokers(4), 12, 3, start_index=2)
    assert a == assign_replicas(brokers(4), 12, 3, start_index=2, replica_shift=2)
    assert a == assign_replicas(brokers(4), 12, 3, start_index=2, rng=random.Random(99))


def test_seeded_rng_is_deterministic_and_broker_order_does_not_matter() -> None:
    bs = brokers(6)
    a = assign_replicas(bs, 20, 3, rng=random.Random(7))
    assert a == assign_replicas(list(reversed(bs)), 20, 3, rng=random.Random(7))


def test_start_partition_id_continues_the_walk() -> None:
    whole = assign_replicas(brokers(4), 10, 2, start_index=1)
    tail = assign_replicas(brokers(4), 6, 2, start_index=1, start_partition_id=4)
    assert tail == {p: whole[p] for p in range(4, 10)}


# -- properties ----------------------------------------------------------------------------------


@given(
    n=st.integers(min_value=1, max_value=9),
    partitions=st.integers(min_value=1, max_value=60),
    first_partition=st.integers(min_value=0, max_value=20),
    seed=st.integers(min_value=0, max_value=2**32),
    data=st.data(),
)
def test_rack_unaware_properties(
    n: int, partitions: int, first_partition: int, seed: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(min_value=1, max_value=n))
    ids = sorted(data.draw(st.sets(st.integers(0, 1000), min_size=n, max_size=n)))
    bs = [BrokerMeta(i) for i in ids]
    got = assign_replicas(
        bs, partitions, rf, start_partition_id=first_partition, rng=random.Random(seed)
    )
    assert sorted(got) == list(range(first_partition, first_partition + partitions))
    for chosen in got.values():
        # rf distinct, known brokers.
        assert len(chosen) == rf == len(set(chosen))
        assert set(chosen) <= set(ids)
    # Leaders walk round-robin: counts differ by at most one, for any number of partitions.
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b, 0) for b in ids]
    assert max(counts) - min(counts) <= 1
    # Within a pass (partition ids k*n .. k*n + n - 1) each replica layer is a rotation of the
    # leaders, so a whole pass gives every broker exactly rf replicas and a partial pass at most
    # rf, at least 0. Starting on a pass boundary leaves one partial pass, otherwise two.
    held = per_broker(got)
    counts = [held.get(b, 0) for b in ids]
    partial_passes = 1 if first_partition % n == 0 else 2
    assert max(counts) - min(counts) <= partial_passes * rf


@given(
    n=st.integers(min_value=1, max_value=9),
    passes=st.integers(min_value=1, max_value=4),
    first_pass=st.integers(min_value=0, max_value=3),
    seed=st.integers(min_value=0, max_value=2**32),
    data=st.data(),
)
def test_whole_passes_spread_replicas_exactly_evenly(
    n: int, passes: int, first_pass: int, seed: int, data: st.DataObject
) -> None:
    # Partition count a multiple of n, starting at a multiple of n: every broker leads exactly
    # `passes` partitions and holds exactly `passes * rf` replicas.
    rf = data.draw(st.integers(min_value=1, max_value=n))
    got = assign_replicas(
        brokers(n), passes * n, rf, start_partition_id=first_pass * n, rng=random.Random(seed)
    )
    assert Counter(r[0] for r in got.values()) == dict.fromkeys(range(n), passes)
    assert per_broker(got) == dict.fromkeys(range(n), passes * rf)


@given(n=st.integers(min_value=2, max_value=8), seed=st.integers(min_value=0, max_value=2**32))
def test_followers_of_one_leader_visit_every_other_broker(n: int, seed: int) -> None:
    # n - 1 passes: the growing shift pairs each leader with each other broker exactly once.
    got = assign_replicas(brokers(n), n * (n - 1), 2, rng=random.Random(seed))
    pairs = Counter((r[0], r[1]) for r in got.values())
    assert pairs == {(a, b): 1 for a in range(n) for b in range(n) if a != b}


@given(
    rack_sizes=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=4),
    partitions=st.integers(min_value=1, max_value=40),
    seed=st.integers(min_value=0, max_value=2**32),
    data=st.data(),
)
def test_rack_aware_properties(
    rack_sizes: list[int], partitions: int, seed: int, data: st.DataObject
) -> None:
    bs = [
        BrokerMeta(r * 10 + i, f"rack{r}") for r, size in enumerate(rack_sizes) for i in range(size)
    ]
    racks = len(rack_sizes)
    rf = data.draw(st.integers(min_value=1, max_value=len(bs)))
    got = assign_replicas(bs, partitions, rf, rng=random.Random(seed))
    rack_of = {b.id: b.rack for b in bs}
    for replicas in got.values():
        assert len(replicas) == rf == len(set(replicas))
        # Each partition covers as many racks as it can: all of them, or one per replica.
        assert len({rack_of[r] for r in replicas}) == min(rf, racks)
    leaders = Counter(r[0] for r in got.values())
    counts = [leaders.get(b.id, 0) for b in bs]
    assert max(counts) - min(counts) <= 1


@given(
    racks=st.integers(min_value=1, max_value=4),
    per_rack=st.integers(min_value=1, max_value=3),
    passes=st.integers(min_value=1, max_value=3),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_rack_aware_is_even_with_equal_racks_and_rf_equal_to_racks(
    racks: int, per_rack: int, passes: int, seed: int
) -> None:
    # Kafka's guarantee: rf == racks, equal racks, whole passes -> even over brokers.
    bs = [BrokerMeta(r * 10 + i, f"rack{r}") for r in range(racks) for i in range(per_rack)]
    got = assign_replicas(bs, passes * len(bs), racks, rng=random.Random(seed))
    assert per_broker(got) == {b.id: passes * racks for b in bs}


# -- errors --------------------------------------------------------------------------------------


def test_errors() -> None:
    with pytest.raises(InvalidReplicationFactorError, match="larger than the 2"):
        assign_replicas(brokers(2), 3, 3)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas(brokers(2), 3, 0)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([], 1, 1)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(brokers(2), 0, 1)
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(brokers(2), 1, 1, start_partition_id=-1)
    with pytest.raises(InvalidReplicaAssignmentError, match="more than once"):
        assign_replicas([BrokerMeta(1), BrokerMeta(1)], 1, 1)


def test_mixed_racks_are_refused_unless_racks_are_ignored() -> None:
    mixed = [BrokerMeta(0, "a"), BrokerMeta(1), BrokerMeta(2, "b")]
    with pytest.raises(InvalidReplicaAssignmentError, match=r"brokers \[1\] have none"):
        assign_replicas(mixed, 3, 2)
    ignored = assign_replicas(mixed, 6, 2, start_index=1, ignore_racks=True)
    assert ignored == assign_replicas(brokers(3), 6, 2, start_index=1)


# -- adding partitions ---------------------------------------------------------------------------


def test_add_partitions_continues_from_partition_zeros_leader() -> None:
    existing = assign_replicas(brokers(3), 3, 2, start_index=1)
    added = add_partitions(existing, brokers(3), 6)
    assert sorted(added) == [3, 4, 5]
    assert all(len(r) == 2 for r in added.values())
    # Kafka: start index = position of partition 0's leader, so leaders keep rotating from it.
    assert [added[p][0] for p in (3, 4, 5)] == [existing[0][0], existing[1][0], existing[2][0]]
    assert added == assign_replicas(brokers(3), 3, 2, start_index=1, start_partition_id=3)


def test_add_partitions_when_partition_zeros_leader_is_gone() -> None:
    existing = {0: (5, 1), 1: (1, 5)}
    bs = [BrokerMeta(1), BrokerMeta(7), BrokerMeta(9)]
    # First broker with id >= 5 is 7, at index 1.
    # Partition 2 leads from index (2 + 1) % 3 = 0; its follower is at 0 + 1 + 1 % 2 = 2.
    assert add_partitions(existing, bs, 3) == {2: (1, 9)}
    # No broker id >= 50: start at index 0.
    assert add_partitions({0: (50,)}, bs, 2) == assign_replicas(
        bs, 1, 1, start_index=0, start_partition_id=1
    )


def test_add_partitions_errors() -> None:
    existing = {0: (0, 1), 1: (1, 2)}
    with pytest.raises(InvalidPartitionsError):
        add_partitions(existing, brokers(3), 2)
    with pytest.raises(InvalidReplicationFactorError):
        add_partitions(existing, brokers(1), 3)
    with pytest.raises(InvalidReplicaAssignmentError):
        add_partitions({1: (0,)}, brokers(3), 3)
    with pytest.raises(InvalidReplicaAssignmentError):
        add_partitions({}, brokers(3), 3)


@given(
    n=st.integers(min_value=1, max_value=6),
    before=st.integers(min_value=1, max_value=12),
    more=st.integers(min_value=1, max_value=12),
    seed=st.integers(min_value=0, max_value=2**32),
    data=st.data(),
)
def test_added_partitions_are_valid(
    n: int, before: int, more: int, seed: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(min_value=1, max_value=n))
    existing = assign_replicas(brokers(n), before, rf, rng=random.Random(seed))
    added = add_partitions(existing, brokers(n), before + more, rng=random.Random(seed))
    merged = {**existing, **added}
    assert validate_manual_assignment(merged, set(range(n)), replication_factor=rf) == merged


# -- manual assignments --------------------------------------------------------------------------


def test_manual_assignment_validation() -> None:
    assert validate_manual_assignment({1: [2, 1], 0: [1, 2]}, {1, 2}) == {0: (1, 2), 1: (2, 1)}
    assert validate_manual_assignment({3: (1,)}, {1}, first_partition=3) == {3: (1,)}
    bad_cases: list[tuple[dict[int, tuple[int, ...]], str]] = [
        ({}, "empty"),
        ({0: (1, 1)}, "twice"),
        ({0: (1, 9)}, "unknown broker"),
        ({1: (1,)}, "without gaps"),
        ({0: (1,), 2: (1,)}, "without gaps"),
        ({0: (1,), 1: (1, 2)}, "same number"),
        ({0: ()}, "at least one"),
    ]
    for bad, message in bad_cases:
        with pytest.raises(InvalidReplicaAssignmentError, match=message):
            validate_manual_assignment(bad, {1, 2})
    with pytest.raises(InvalidReplicaAssignmentError, match="replication factor is 2"):
        validate_manual_assignment({0: (1,)}, {1, 2}, replication_factor=2)
