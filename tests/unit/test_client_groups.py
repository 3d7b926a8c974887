"""The pure parts of the group client: the leader's assignment from members' JoinGroup
metadata (pafka's and kafka-python's subscriptions, sticky claims), and error mapping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from pafka.client.group_join import leader_assignments
from pafka.client.groups import DescribedMember, JoinedMember, _error
from pafka.errors import ConfigError, IllegalGenerationError, RebalanceInProgressError
from pafka.groups.assignors import ASSIGNORS, MemberSubscription, assign
from pafka.groups.consumer_protocol import (
    Subscription,
    TopicPartition,
    decode_assignment,
    encode_subscription,
)
from pafka.groups.kafka_python_assignors import encode_sticky_user_data


def _ours(member_id: str, *topics: str, instance: str | None = None) -> JoinedMember:
    return JoinedMember(member_id, instance, encode_subscription(Subscription(tuple(topics))))


def _kafka_python(member_id: str, topics: list[str], user_data: bytes | None) -> JoinedMember:
    metadata = ConsumerProtocolSubscription(version=0, topics=topics, user_data=user_data)
    return JoinedMember(member_id, None, bytes(metadata.encode()))


def _decoded(assignments: dict[str, bytes]) -> dict[str, frozenset[TopicPartition]]:
    return {m: decode_assignment(a).partitions for m, a in assignments.items()}


def test_range_over_mixed_clients_is_kafkas_range() -> None:
    members = [_ours("rest-b", "t"), _kafka_python("kp-a", ["t", "u"], None)]
    got = _decoded(leader_assignments("range", members, {"t": 4, "u": 2}))
    assert got == {
        "kp-a": frozenset({("t", 0), ("t", 1), ("u", 0), ("u", 1)}),
        "rest-b": frozenset({("t", 2), ("t", 3)}),
    }


def test_topics_without_partitions_assign_nothing() -> None:
    got = _decoded(leader_assignments("roundrobin", [_ours("m", "missing")], {}))
    assert got == {"m": frozenset()}


def test_sticky_keeps_what_kafka_clients_report_holding() -> None:
    held = encode_sticky_user_data([("t", 0), ("t", 1), ("t", 2)], generation=4)
    members = [_kafka_python("a", ["t"], held), _ours("b", "t"), _ours("c", "t")]
    got = _decoded(leader_assignments("sticky", members, {"t": 6}))
    assert sorted(len(p) for p in got.values()) == [2, 2, 2]
    assert got["a"] < frozenset({("t", 0), ("t", 1), ("t", 2)})


def test_an_unknown_protocol_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        leader_assignments("cooperative-sticky", [_ours("m", "t")], {"t": 1})


@given(
    st.sampled_from(sorted(ASSIGNORS)),
    st.lists(st.sets(st.sampled_from("tuv"), min_size=1), min_size=1, max_size=5),
    st.dictionaries(st.sampled_from("tuv"), st.integers(1, 6)),
)
def test_assignments_are_the_assignors_own(
    protocol: str, subscriptions: list[set[str]], counts: dict[str, int]
) -> None:
    members = [_ours(f"m{i}", *sorted(ts)) for i, ts in enumerate(subscriptions)]
    expected = assign(
        protocol,
        [MemberSubscription(f"m{i}", frozenset(ts)) for i, ts in enumerate(subscriptions)],
        counts,
    )
    assert _decoded(leader_assignments(protocol, members, counts)) == expected


def test_errors_carry_their_class_and_what_failed() -> None:
    exc = _error(RebalanceInProgressError.code, "Heartbeat of m in 'g'")
    assert isinstance(exc, RebalanceInProgressError)
    assert exc.message.startswith("Heartbeat of m in 'g': The group is rebalancing")
    assert isinstance(_error(IllegalGenerationError.code, "x"), IllegalGenerationError)


def test_a_described_member_with_foreign_bytes_has_no_partitions() -> None:
    member = DescribedMember("m", None, "c", "h", b"", b"\xff\xff\x00")
    assert member.assigned_partitions() == frozenset()
