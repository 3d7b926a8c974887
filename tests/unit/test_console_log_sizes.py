"""Sizes on disk from the brokers' DescribeLogDirs answers (pure): each partition's leader and
replicas, a topic's totals, and which broker is asked for what."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.client.cluster import PartitionLeader, TopicInfo
from services.gateway.console.log_sizes import holdings, partition_sizes, topic_size


def leader(at: int, replicas: tuple[int, ...]) -> PartitionLeader:
    return PartitionLeader(leader=at, leader_epoch=0, replicas=replicas, isr=replicas)


def test_a_partitions_sizes_come_from_each_replicas_broker() -> None:
    partitions = {1: leader(2, (2, 3)), 0: leader(1, (1, 2)), 2: leader(-1, (3, 1))}
    reported = {
        1: {("t", 0): 500, ("t", 2): 40},
        2: {("t", 0): 480, ("t", 1): 70},
        3: None,  # did not answer
    }
    sizes = partition_sizes("t", partitions, reported)
    assert [s.partition for s in sizes] == [0, 1, 2]
    assert sizes[0].replicas == ((1, 500), (2, 480)) and sizes[0].leader_bytes == 500
    assert sizes[1].replicas == ((2, 70), (3, None)) and sizes[1].leader_bytes == 70
    assert sizes[2].leader is None and sizes[2].leader_bytes is None  # offline
    total = topic_size(sizes)
    assert (total.leaders_bytes, total.replicas_bytes, total.unknown_replicas) == (570, 1090, 2)


def test_a_broker_that_answered_without_the_partition_leaves_it_unknown() -> None:
    sizes = partition_sizes("t", {0: leader(1, (1,))}, {1: {("other", 0): 9}})
    assert sizes[0].leader_bytes is None
    assert topic_size(sizes).unknown_replicas == 1


@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.dictionaries(
            st.integers(0, 20), st.lists(st.integers(1, 5), min_size=1, max_size=3, unique=True)
        ),
    )
)
def test_each_broker_is_asked_for_exactly_the_replicas_it_holds(
    assignment: dict[str, dict[int, list[int]]],
) -> None:
    topics = [
        TopicInfo(name, {p: leader(r[0], tuple(r)) for p, r in parts.items()})
        for name, parts in assignment.items()
    ]
    held = holdings(topics)
    asked = sorted((b, t, p) for b, parts in held.items() for t, p in parts)
    expected = sorted(
        (b, t, p) for t, parts in assignment.items() for p, r in parts.items() for b in r
    )
    assert asked == expected
    # Every replica reported: the leaders' total counts each partition once.
    reported = {b: {(t, p): 10 for t, p in parts} for b, parts in held.items()}
    for info in topics:
        total = topic_size(partition_sizes(info.name, info.partitions, reported))
        assert total.leaders_bytes == 10 * len(info.partitions)
        assert total.replicas_bytes == 10 * sum(len(s.replicas) for s in info.partitions.values())
        assert total.unknown_replicas == 0
