"""Group partition assignors: Kafka's worked examples, the properties every assignment keeps,
and the kafka-python adapter run on kafka-python's own protocol objects (no network)."""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer import JoinGroupResponse
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.structs import TopicPartition as KafkaTopicPartition

from pafka.errors import ConfigError
from pafka.groups.assignors import (
    ASSIGNORS,
    AssignFn,
    MemberSubscription,
    TopicPartition,
    assign,
    range_assign,
    round_robin_assign,
    sticky_assign,
)
from pafka.groups.kafka_python_assignors import (
    PafkaRangeAssignor,
    PafkaRoundRobinAssignor,
    PafkaStickyAssignor,
    decode_sticky_user_data,
    encode_sticky_user_data,
    newest_claims,
)

Result = dict[str, frozenset[TopicPartition]]


def member(
    member_id: str,
    *topics: str,
    owned: Iterable[TopicPartition] = (),
    instance_id: str | None = None,
) -> MemberSubscription:
    return MemberSubscription(member_id, frozenset(topics), frozenset(owned), instance_id)


def tps(topic: str, *partitions: int) -> frozenset[TopicPartition]:
    return frozenset((topic, p) for p in partitions)


def consumers(n: int, *topics: str) -> list[MemberSubscription]:
    return [member(f"C{i}", *topics) for i in range(n)]


# -- worked examples ------------------------------------------------------------------------------
# The seed's examples: consumers C0.. in member-id order, topics t0 (5 partitions) and t1 (7).


def test_range_seven_partitions_over_five_consumers() -> None:
    assert range_assign(consumers(5, "t"), {"t": 7}) == {
        "C0": tps("t", 0, 1),
        "C1": tps("t", 2, 3),
        "C2": tps("t", 4),
        "C3": tps("t", 5),
        "C4": tps("t", 6),
    }


def test_range_leaves_out_members_not_subscribed_to_a_topic() -> None:
    members = [member(f"C{i}", "t0", "t1") for i in range(3)] + [member("C3", "t1")]
    members.append(member("C4", "t1"))
    assert range_assign(members, {"t0": 5, "t1": 7}) == {
        "C0": tps("t0", 0, 1) | tps("t1", 0, 1),
        "C1": tps("t0", 2, 3) | tps("t1", 2, 3),
        "C2": tps("t0", 4) | tps("t1", 4),
        "C3": tps("t1", 5),
        "C4": tps("t1", 6),
    }


def test_range_kafka_javadoc_example() -> None:
    assert range_assign(consumers(2, "t0", "t1"), {"t0": 3, "t1": 3}) == {
        "C0": tps("t0", 0, 1) | tps("t1", 0, 1),
        "C1": tps("t0", 2) | tps("t1", 2),
    }


def test_roundrobin_seven_partitions_over_three_consumers() -> None:
    assert round_robin_assign(consumers(3, "t"), {"t": 7}) == {
        "C0": tps("t", 0, 3, 6),
        "C1": tps("t", 1, 4),
        "C2": tps("t", 2, 5),
    }


def test_roundrobin_skips_members_not_subscribed_to_a_topic() -> None:
    members = [member(f"C{i}", "t0", "t1") for i in range(3)]
    members += [member("C3", "t1"), member("C4", "t1")]
    # t0p3 passes over C3 and C4 to C0; the circle then carries on from C1.
    assert round_robin_assign(members, {"t0": 5, "t1": 7}) == {
        "C0": tps("t0", 0, 3) | tps("t1", 3),
        "C1": tps("t0", 1, 4) | tps("t1", 4),
        "C2": tps("t0", 2) | tps("t1", 0, 5),
        "C3": tps("t1", 1, 6),
        "C4": tps("t1", 2),
    }


def test_roundrobin_kafka_javadoc_examples() -> None:
    assert round_robin_assign(consumers(2, "t0", "t1"), {"t0": 3, "t1": 3}) == {
        "C0": tps("t0", 0, 2) | tps("t1", 1),
        "C1": tps("t0", 1) | tps("t1", 0, 2),
    }
    uneven = [member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")]
    assert round_robin_assign(uneven, {"t0": 1, "t1": 2, "t2": 3}) == {
        "C0": tps("t0", 0),
        "C1": tps("t1", 0),
        "C2": tps("t1", 1) | tps("t2", 0, 1, 2),
    }


def test_sticky_kafka_javadoc_example_member_leaves() -> None:
    counts = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
    first = sticky_assign(consumers(3, *counts), counts)
    assert first == {
        "C0": tps("t0", 0) | tps("t1", 1) | tps("t3", 0),
        "C1": tps("t0", 1) | tps("t2", 0) | tps("t3", 1),
        "C2": tps("t1", 0) | tps("t2", 1),
    }
    rest = [member(c, *counts, owned=first[c]) for c in ("C0", "C2")]
    # Roundrobin would move five partitions here; sticky moves only C1's three.
    assert sticky_assign(rest, counts) == {
        "C0": first["C0"] | tps("t2", 0),
        "C2": first["C2"] | tps("t0", 1) | tps("t3", 1),
    }


def test_sticky_kafka_javadoc_example_differing_subscriptions() -> None:
    counts = {"t0": 1, "t1": 2, "t2": 3}
    members = [member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")]
    first = sticky_assign(members, counts)
    assert first == {"C0": tps("t0", 0), "C1": tps("t1", 0, 1), "C2": tps("t2", 0, 1, 2)}
    rest = [member(m.member_id, *m.topics, owned=first[m.member_id]) for m in members[1:]]
    assert sticky_assign(rest, counts) == {
        "C1": tps("t1", 0, 1) | tps("t0", 0),
        "C2": tps("t2", 0, 1, 2),
    }


@pytest.mark.parametrize(
    ("members", "counts", "expected"),
    [
        pytest.param(
            # c can only take x0 from b; b takes back from a the z0 a was just given, not z1.
            [member("a", "z", owned=tps("z", 1)), member("b", "x", "z"), member("c", "x")],
            {"x": 1, "z": 2},
            {"a": tps("z", 1), "b": tps("z", 0), "c": tps("x", 0)},
            id="a-chain-hands-on-partitions-nobody-owned",
        ),
        pytest.param(
            # y0 has fewer possible takers than x1, so it is placed first, on b, and x1 on c.
            [member("a", "x", "y", owned=tps("x", 0)), member("b", "x", "y"), member("c", "x")],
            {"x": 2, "y": 1},
            {"a": tps("x", 0), "b": tps("y", 0), "c": tps("x", 1)},
            id="fewest-takers-placed-first",
        ),
        pytest.param(
            # c could take a's own y0 or x0, which b was given; it takes x0.
            [
                member("a", "y", "z", owned=tps("y", 0)),
                member("b", "x", "y", "z"),
                member("c", "x", "y"),
            ],
            {"x": 1, "y": 1, "z": 2},
            {"a": tps("y", 0) | tps("z", 0), "b": tps("z", 1), "c": tps("x", 0)},
            id="givers-without-a-move-preferred",
        ),
        pytest.param(
            # a takes x1 from b, then b (not a, through b) takes y2 from c: two moves, not three.
            [
                member("a", "x"),
                member("b", "x", "y", owned=tps("x", 0, 1)),
                member("c", "y", owned=tps("y", 0, 1, 2)),
            ],
            {"x": 2, "y": 3},
            {"a": tps("x", 1), "b": tps("x", 0) | tps("y", 2), "c": tps("y", 0, 1)},
            id="shortest-chain-from-any-least-loaded-member",
        ),
    ],
)
def test_sticky_moves_no_owned_partition_it_need_not_with_differing_subscriptions(
    members: list[MemberSubscription], counts: dict[str, int], expected: Result
) -> None:
    assert sticky_assign(members, counts) == expected


def test_sticky_gives_a_doubly_owned_partition_to_the_first_claimant_in_member_order() -> None:
    dynamic = [member("b", "t", owned=tps("t", 0)), member("a", "t", owned=tps("t", 0))]
    assert sticky_assign(dynamic, {"t": 2}) == {"a": tps("t", 0), "b": tps("t", 1)}
    static = [
        member("b", "t", owned=tps("t", 0), instance_id="i1"),
        member("a", "t", owned=tps("t", 0), instance_id="i2"),
    ]
    assert sticky_assign(static, {"t": 2}) == {"a": tps("t", 1), "b": tps("t", 0)}


def test_static_members_are_ordered_by_instance_id_before_dynamic_members() -> None:
    members = [
        member("dynamic-a", "t"),
        member("z-restarted", "t", instance_id="host-1"),
        member("a-restarted", "t", instance_id="host-2"),
    ]
    expected = {"z-restarted": tps("t", 0, 1), "a-restarted": tps("t", 2), "dynamic-a": tps("t", 3)}
    assert range_assign(members, {"t": 4}) == expected
    assert round_robin_assign(members, {"t": 3}) == {
        "z-restarted": tps("t", 0),
        "a-restarted": tps("t", 1),
        "dynamic-a": tps("t", 2),
    }


def test_topics_without_a_partition_count_are_not_yet_created() -> None:
    members = [member("a", "t", "later"), member("b", "later")]
    for assignor in ASSIGNORS.values():
        assert assignor(members, {"t": 2}) == {"a": tps("t", 0, 1), "b": frozenset()}
        assert assignor([], {"t": 2}) == {}


def test_assign_runs_the_assignor_kafka_clients_name() -> None:
    members = consumers(2, "t")
    assert set(ASSIGNORS) == {"range", "roundrobin", "sticky"}
    assert assign("roundrobin", members, {"t": 3}) == round_robin_assign(members, {"t": 3})
    with pytest.raises(ConfigError, match="cooperative-sticky"):
        assign("cooperative-sticky", members, {"t": 3})


# -- properties -----------------------------------------------------------------------------------

TOPICS = ("a", "b", "c")
MEMBER_IDS = tuple(f"m{i}" for i in range(8))
ALL_ASSIGNORS = pytest.mark.parametrize("assignor", list(ASSIGNORS.values()), ids=list(ASSIGNORS))


Group = tuple[list[MemberSubscription], dict[str, int]]


def groups(
    identical: bool = False, max_members: int = 6, max_partitions: int = 9
) -> st.SearchStrategy[Group]:
    """Members (some static, some owning partitions, valid or not) and partition counts."""
    counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, max_partitions), min_size=1)
    ids = st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=max_members, unique=True)
    # Instance ids in another order than member ids, so that sorting by the wrong one shows.
    instance_ids = st.permutations(MEMBER_IDS)
    # "later" stands for a subscribed topic that does not exist yet.
    topics = st.frozensets(st.sampled_from((*TOPICS, "later")))
    owned = st.frozensets(
        st.tuples(st.sampled_from(TOPICS), st.integers(0, max_partitions)), max_size=4
    )

    @st.composite
    def group(draw: st.DrawFn) -> Group:
        shared = draw(topics)
        members = [
            MemberSubscription(
                member_id,
                shared if identical else draw(topics),
                draw(owned),
                instance_id if draw(st.booleans()) else None,
            )
            for member_id, instance_id in zip(draw(ids), draw(instance_ids), strict=False)
        ]
        return members, draw(counts)

    return group()


GROUPS = groups()
IDENTICAL_GROUPS = groups(identical=True)


def subscribed(
    members: Iterable[MemberSubscription], counts: Mapping[str, int]
) -> set[TopicPartition]:
    return {(t, p) for m in members for t in m.topics if t in counts for p in range(counts[t])}


def owner_of(result: Result) -> dict[TopicPartition, str]:
    return {tp: member_id for member_id, held in result.items() for tp in held}


@ALL_ASSIGNORS
@given(group=GROUPS)
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(
    assignor: AssignFn, group: Group
) -> None:
    members, counts = group
    result = assignor(members, counts)
    assert set(result) == {m.member_id for m in members}
    assert sum(len(held) for held in result.values()) == len(owner_of(result))
    assert set(owner_of(result)) == subscribed(members, counts)
    topics = {m.member_id: m.topics for m in members}
    assert all(topic in topics[owner] for (topic, _), owner in owner_of(result).items())


@ALL_ASSIGNORS
@given(group=GROUPS, data=st.data())
def test_member_order_does_not_matter(
    assignor: AssignFn, group: Group, data: st.DataObject
) -> None:
    members, counts = group
    shuffled = data.draw(st.permutations(members))
    assert assignor(shuffled, counts) == assignor(members, counts)


@given(group=IDENTICAL_GROUPS)
def test_range_spreads_each_topic_within_one(group: Group) -> None:
    members, counts = group
    result = range_assign(members, counts)
    for topic in counts:
        per_member = [sum(1 for t, _ in held if t == topic) for held in result.values()]
        assert max(per_member) - min(per_member) <= 1


@pytest.mark.parametrize("assignor", [round_robin_assign, sticky_assign])
@given(group=IDENTICAL_GROUPS)
def test_identical_subscriptions_get_totals_within_one(assignor: AssignFn, group: Group) -> None:
    members, counts = group
    loads = [len(held) for held in assignor(members, counts).values()]
    assert max(loads) - min(loads) <= 1


@given(group=IDENTICAL_GROUPS, data=st.data())
def test_range_static_member_keeps_its_partitions_across_a_restart(
    group: Group, data: st.DataObject
) -> None:
    members, counts = group
    static = [m for m in members if m.instance_id is not None]
    assume(static)
    restarted = data.draw(st.sampled_from(static))
    renamed = MemberSubscription("new-id", restarted.topics, restarted.owned, restarted.instance_id)
    before = range_assign(members, counts)
    after = range_assign([renamed if m is restarted else m for m in members], counts)
    assert after.pop("new-id") == before.pop(restarted.member_id)
    assert after == before


def most_even_loads(members: Sequence[MemberSubscription], counts: Mapping[str, int]) -> list[int]:
    """By trying every assignment: the loads, largest first, of the most even one."""
    choices = [
        [m.member_id for m in members if topic in m.topics]
        for topic, _ in sorted(subscribed(members, counts))
    ]
    return min(
        sorted((Counter(owners)[m.member_id] for m in members), reverse=True)
        for owners in itertools.product(*choices)
    )


@given(group=groups(max_members=3, max_partitions=2))
def test_sticky_is_as_even_as_the_subscriptions_allow(group: Group) -> None:
    members, counts = group
    loads = sorted((len(held) for held in sticky_assign(members, counts).values()), reverse=True)
    assert loads == most_even_loads(members, counts)


def least_moves_for_balance(owned_counts: Sequence[int], partitions: int) -> int:
    """Moves any within-one assignment needs: the bigger quotas go to the biggest owners."""
    share, extra = divmod(partitions, len(owned_counts))
    quotas = [share + 1] * extra + [share] * (len(owned_counts) - extra)
    return sum(
        max(0, o - q) for o, q in zip(sorted(owned_counts, reverse=True), quotas, strict=True)
    )


def moved(members: Iterable[MemberSubscription], result: Result) -> int:
    return sum(len(m.owned - result[m.member_id]) for m in members)


@given(
    counts=st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1),
    size=st.integers(1, 6),
    joiner=st.sampled_from(["a-new", "m-new", "z-new"]),
    data=st.data(),
)
def test_sticky_moves_only_what_balance_needs_when_a_member_joins_or_leaves(
    counts: dict[str, int], size: int, joiner: str, data: st.DataObject
) -> None:
    ids = list(MEMBER_IDS[:size])
    previous = sticky_assign([member(i, *counts) for i in ids], counts)
    leaver = data.draw(st.sampled_from([None, *ids])) if size > 1 else None
    after = [member(i, *counts, owned=previous[i]) for i in ids if i != leaver]
    if leaver is None:
        after.append(member(joiner, *counts))
    result = sticky_assign(after, counts)

    share = sum(counts.values()) // len(after)
    # Whoever owns no more than the smaller share keeps everything; everyone keeps that share.
    for m in after:
        assert len(m.owned & result[m.member_id]) >= min(len(m.owned), share)
    needed = least_moves_for_balance([len(m.owned) for m in after], sum(counts.values()))
    assert moved(after, result) <= needed


@given(
    counts=st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 10), min_size=1),
    size=st.integers(1, 6),
    data=st.data(),
)
def test_sticky_moves_only_what_balance_needs_from_any_previous_assignment(
    counts: dict[str, int], size: int, data: st.DataObject
) -> None:
    ids = MEMBER_IDS[:size]
    partitions = sorted(subscribed([member("x", *counts)], counts))
    # None: the partition had no owner (its topic grew, or its owner left).
    owners = data.draw(st.lists(st.sampled_from([None, *ids]), min_size=len(partitions)))
    owned = {i: {tp for tp, o in zip(partitions, owners, strict=False) if o == i} for i in ids}
    members = [member(i, *counts, owned=owned[i]) for i in ids]
    result = sticky_assign(members, counts)
    needed = least_moves_for_balance([len(owned[i]) for i in ids], len(partitions))
    assert moved(members, result) <= needed


# -- the kafka-python adapter ---------------------------------------------------------------------


class FakeCluster:
    """What kafka-python's ClusterMetadata tells an assignor: partition ids per topic."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.counts[topic])) if topic in self.counts else None


def joined(member_id: str, subscription: Any, instance_id: str | None = None) -> Any:
    """A JoinGroup member as kafka-python's leader sees it: metadata encoded, then decoded."""
    metadata = ConsumerProtocolSubscription.decode(subscription.encode())
    return JoinGroupResponse.JoinGroupResponseMember(
        member_id=member_id, group_instance_id=instance_id, metadata=metadata, version=5
    )


def received(assignments: Mapping[str, Any]) -> Result:
    """Each member's partitions, from the assignments as the members decode them."""
    return {
        member_id: frozenset(
            (tp.topic, tp.partition)
            for tp in ConsumerProtocolAssignment.decode(assignment.encode()).partitions()
        )
        for member_id, assignment in assignments.items()
    }


def subscription(topics: Iterable[str], user_data: bytes | None = None) -> Any:
    return ConsumerProtocolSubscription(version=0, topics=sorted(topics), user_data=user_data)


def kafka_assignment(topic: str, *partitions: int) -> Any:
    return ConsumerProtocolAssignment(
        version=0, assigned_partitions=[(topic, list(partitions))], user_data=None
    )


ADAPTERS = pytest.mark.parametrize(
    "adapter", [PafkaRangeAssignor, PafkaRoundRobinAssignor, PafkaStickyAssignor]
)


@ADAPTERS
@given(group=GROUPS)
def test_adapter_assigns_what_the_pure_function_does(adapter: type[Any], group: Group) -> None:
    members, counts = group
    joins = [
        joined(
            m.member_id,
            subscription(m.topics, encode_sticky_user_data(m.owned, 1) if m.owned else None),
            m.instance_id,
        )
        for m in members
    ]
    if adapter is not PafkaStickyAssignor:
        members = [
            MemberSubscription(m.member_id, m.topics, instance_id=m.instance_id) for m in members
        ]
    got = received(adapter().assign(FakeCluster(counts), joins))
    assert got == ASSIGNORS[adapter.name](members, counts)


@pytest.mark.parametrize(
    ("ours", "theirs", "identical"),
    [
        (PafkaRangeAssignor, RangePartitionAssignor, False),
        # kafka-python 3.0.12's roundrobin raises KeyError when it must pass over a member.
        (PafkaRoundRobinAssignor, RoundRobinPartitionAssignor, True),
    ],
)
@given(data=st.data())
def test_adapter_agrees_with_kafka_pythons_own_assignor(
    ours: type[Any], theirs: type[Any], identical: bool, data: st.DataObject
) -> None:
    members, counts = data.draw(IDENTICAL_GROUPS if identical else GROUPS)
    # kafka-python groups static and dynamic members with an unsorted groupby, which loses
    # members when the two kinds alternate; compare on dynamic members only.
    joins = [joined(m.member_id, subscription(m.topics)) for m in members]
    cluster = FakeCluster(counts)
    assert ours.name == theirs.name
    assert received(ours().assign(cluster, joins)) == received(theirs.assign(cluster, joins))


def test_sticky_user_data_is_laid_out_as_java_and_librdkafka_write_it() -> None:
    def string(s: str) -> bytes:
        return struct.pack(">h", len(s)) + s.encode()

    java = (
        struct.pack(">i", 2)  # topics
        + string("a")
        + struct.pack(">iii", 2, 0, 3)  # 2 partitions: 0, 3
        + string("b")
        + struct.pack(">ii", 1, 1)
        + struct.pack(">i", 7)  # generation
    )
    previous = tps("a", 3, 0) | tps("b", 1)
    assert encode_sticky_user_data(previous, 7) == java
    assert decode_sticky_user_data(java) == (previous, 7)
    # Version 0 has no generation.
    assert decode_sticky_user_data(java[:-4]) == (previous, -1)


def test_sticky_user_data_from_kafka_python_and_unreadable_user_data() -> None:
    sent = StickyPartitionAssignor._metadata(["a"], [KafkaTopicPartition("a", 1)], 4)
    assert decode_sticky_user_data(joined("m", sent).metadata.user_data) == (tps("a", 1), 4)
    for unreadable in (None, b"", b"\x00", b"\xff\xff\xff"):
        assert decode_sticky_user_data(unreadable) is None


def test_newest_generation_claim_stands() -> None:
    claims = {
        "m1": (tps("a", 0, 1), 5),
        "m2": (tps("a", 1, 2), 4),
        "m3": (tps("a", 2), 4),
    }
    assert newest_claims(claims) == {"m1": tps("a", 0, 1), "m2": tps("a", 2), "m3": tps("a", 2)}


def test_sticky_adapter_carries_each_members_last_assignment() -> None:
    first, second, newcomer = PafkaStickyAssignor(), PafkaStickyAssignor(), PafkaStickyAssignor()
    first.on_assignment(kafka_assignment("a", 0, 1, 2), 3)
    second.on_assignment(kafka_assignment("a", 3), 3)
    joins = [
        joined("m1", first.metadata({"a"})),
        joined("m2", second.metadata({"a"})),
        joined("m3", newcomer.metadata({"a"})),
    ]
    assert newcomer.metadata({"a"}).user_data is None
    got = received(newcomer.assign(FakeCluster({"a": 4}), joins))
    assert got == {"m1": tps("a", 0, 1), "m2": tps("a", 3), "m3": tps("a", 2)}


def test_sticky_adapter_reads_owned_partitions_when_there_is_no_user_data() -> None:
    cooperative = ConsumerProtocolSubscription(
        version=1, topics=["a"], user_data=None, owned_partitions=[("a", [2, 3])]
    )
    stale = subscription(["a"], encode_sticky_user_data(tps("a", 3, 0), 1))
    current = subscription(["a"], encode_sticky_user_data(tps("a", 1), 2))
    joins = [joined("m1", cooperative), joined("m2", stale), joined("m3", current)]
    got = received(PafkaStickyAssignor().assign(FakeCluster({"a": 4}), joins))
    # a3: m2's claim from generation 1 beats m1's, whose subscription carries no generation (-1).
    assert got == {"m1": tps("a", 2), "m2": tps("a", 0, 3), "m3": tps("a", 1)}
