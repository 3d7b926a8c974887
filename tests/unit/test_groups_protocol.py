"""The "consumer" embedded protocol codec, with kafka-python's generated schemas as the oracle:
golden bytes, round trips both ways, arbitrary and truncated bytes, newer versions."""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from pafka.errors import ProtocolError
from pafka.groups.consumer_protocol import (
    PROTOCOL_TYPE,
    SUBSCRIPTION_MAX_VERSION,
    Assignment,
    Subscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
TOPICS = st.text(max_size=12)
PARTITION_SETS = st.frozensets(st.tuples(TOPICS, INT32), max_size=8)
USER_DATA = st.none() | st.binary(max_size=24)
RACKS = st.none() | st.text(max_size=8)


@st.composite
def subscriptions(draw: st.DrawFn, version: int | None = None) -> Subscription:
    """A subscription holding only what its version carries (the rest at the defaults)."""
    v = draw(st.integers(0, SUBSCRIPTION_MAX_VERSION)) if version is None else version
    return Subscription(
        topics=tuple(draw(st.lists(TOPICS, max_size=6))),
        user_data=draw(USER_DATA),
        owned_partitions=draw(PARTITION_SETS) if v >= 1 else frozenset(),
        generation_id=draw(INT32) if v >= 2 else -1,
        rack_id=draw(RACKS) if v >= 3 else None,
        version=v,
    )


ASSIGNMENTS = st.builds(
    Assignment, partitions=PARTITION_SETS, user_data=USER_DATA, version=st.integers(0, 3)
)


# -- kafka-python as the oracle ----------------------------------------------------------------


def _grouped(partitions: frozenset[TopicPartition]) -> list[tuple[str, list[int]]]:
    """Partitions as the wire lists them: topics in order, partition numbers ascending."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in sorted(partitions):
        by_topic.setdefault(topic, []).append(p)
    return list(by_topic.items())


def _flatten(topic_partitions: Any) -> frozenset[TopicPartition]:
    return frozenset((tp.topic, p) for tp in topic_partitions for p in tp.partitions)


def kafka_subscription(sub: Subscription) -> bytes:
    cls = ConsumerProtocolSubscription
    return bytes(
        cls(
            topics=list(sub.topics),
            user_data=sub.user_data,
            owned_partitions=[
                cls.TopicPartition(topic=t, partitions=ps)
                for t, ps in _grouped(sub.owned_partitions)
            ],
            generation_id=sub.generation_id,
            rack_id=sub.rack_id,
        ).encode(version=sub.version)
    )


def kafka_assignment(assignment: Assignment) -> bytes:
    cls = ConsumerProtocolAssignment
    return bytes(
        cls(
            assigned_partitions=[
                cls.TopicPartition(topic=t, partitions=ps)
                for t, ps in _grouped(assignment.partitions)
            ],
            user_data=assignment.user_data,
        ).encode(version=assignment.version)
    )


def _user_data(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


# -- golden bytes ------------------------------------------------------------------------------

OWNED = frozenset({("a", 0), ("a", 2)})
SUB_V0 = (
    b"\x00\x00"  # version 0
    + b"\x00\x00\x00\x02"  # two topics
    + b"\x00\x01a"  # "a"
    + b"\x00\x02bc"  # "bc"
    + b"\x00\x00\x00\x02xy"  # user data b"xy"
)
SUB_V1_TAIL = (
    b"\x00\x00\x00\x01"  # owned partitions: one topic
    + b"\x00\x01a"  # "a"
    + b"\x00\x00\x00\x02"  # two partitions
    + b"\x00\x00\x00\x00"  # 0
    + b"\x00\x00\x00\x02"  # 2
)
SUB_V2_TAIL = b"\x00\x00\x00\x07"  # generation 7
SUB_V3_TAIL = b"\x00\x02r1"  # rack "r1"

GOLDEN_SUBSCRIPTIONS = [
    (Subscription(("a", "bc"), b"xy", version=0), SUB_V0),
    (
        Subscription(("a", "bc"), b"xy", OWNED, version=1),
        b"\x00\x01" + SUB_V0[2:] + SUB_V1_TAIL,
    ),
    (
        Subscription(("a", "bc"), b"xy", OWNED, 7, version=2),
        b"\x00\x02" + SUB_V0[2:] + SUB_V1_TAIL + SUB_V2_TAIL,
    ),
    (
        Subscription(("a", "bc"), b"xy", OWNED, 7, "r1", version=3),
        b"\x00\x03" + SUB_V0[2:] + SUB_V1_TAIL + SUB_V2_TAIL + SUB_V3_TAIL,
    ),
    (
        # Nulls: user data -1, rack -1; empty owned partitions; default generation -1.
        Subscription(("t",), version=3),
        b"\x00\x03"
        + b"\x00\x00\x00\x01\x00\x01t"  # topics ["t"]
        + b"\xff\xff\xff\xff"  # null user data
        + b"\x00\x00\x00\x00"  # no owned partitions
        + b"\xff\xff\xff\xff"  # generation -1
        + b"\xff\xff",  # null rack
    ),
]

ASSIGNMENT_BODY = (
    b"\x00\x00\x00\x02"  # two topics
    + b"\x00\x01a"  # "a"
    + b"\x00\x00\x00\x02"  # two partitions
    + b"\x00\x00\x00\x01"  # 1
    + b"\x00\x00\x00\x03"  # 3
    + b"\x00\x01b"  # "b"
    + b"\x00\x00\x00\x01"  # one partition
    + b"\x00\x00\x00\x00"  # 0
)
ASSIGNED = frozenset({("a", 1), ("a", 3), ("b", 0)})
GOLDEN_ASSIGNMENTS = [
    (Assignment(ASSIGNED, None, 0), b"\x00\x00" + ASSIGNMENT_BODY + b"\xff\xff\xff\xff"),
    (Assignment(ASSIGNED, b"u", 1), b"\x00\x01" + ASSIGNMENT_BODY + b"\x00\x00\x00\x01u"),
    (Assignment(frozenset(), b"", 0), b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
]


def _golden_id(param: object) -> str:
    """The golden bytes name a case: a set's repr varies with string hashing from one process
    to the next, and test processes (pytest-xdist) must collect the same names."""
    return param.hex() if isinstance(param, bytes) else type(param).__name__


@pytest.mark.parametrize(("value", "golden"), GOLDEN_SUBSCRIPTIONS, ids=_golden_id)
def test_golden_subscription(value: Subscription, golden: bytes) -> None:
    assert encode_subscription(value) == golden
    assert kafka_subscription(value) == golden
    assert decode_subscription(golden) == value


@pytest.mark.parametrize(("value", "golden"), GOLDEN_ASSIGNMENTS, ids=_golden_id)
def test_golden_assignment(value: Assignment, golden: bytes) -> None:
    assert encode_assignment(value) == golden
    assert kafka_assignment(value) == golden
    assert decode_assignment(golden) == value


def test_protocol_type_is_kafkas() -> None:
    assert PROTOCOL_TYPE == "consumer"
    assert ConsumerProtocolSubscription.max_version == SUBSCRIPTION_MAX_VERSION


# -- round trips -------------------------------------------------------------------------------


@given(subscriptions())
def test_subscription_round_trip(sub: Subscription) -> None:
    assert decode_subscription(encode_subscription(sub)) == sub


@given(ASSIGNMENTS)
def test_assignment_round_trip(assignment: Assignment) -> None:
    assert decode_assignment(encode_assignment(assignment)) == assignment


@settings(max_examples=200)
@given(subscriptions())
def test_subscription_bytes_equal_kafka_pythons(sub: Subscription) -> None:
    encoded = encode_subscription(sub)
    assert encoded == kafka_subscription(sub)
    theirs = ConsumerProtocolSubscription.decode(encoded)
    assert theirs.version == sub.version
    assert tuple(theirs.topics) == sub.topics
    assert _user_data(theirs.user_data) == sub.user_data
    if sub.version >= 1:
        assert _flatten(theirs.owned_partitions) == sub.owned_partitions
    if sub.version >= 2:
        assert theirs.generation_id == sub.generation_id
    if sub.version >= 3:
        assert theirs.rack_id == sub.rack_id


@settings(max_examples=200)
@given(ASSIGNMENTS)
def test_assignment_bytes_equal_kafka_pythons(assignment: Assignment) -> None:
    encoded = encode_assignment(assignment)
    assert encoded == kafka_assignment(assignment)
    theirs = ConsumerProtocolAssignment.decode(encoded)
    assert _flatten(theirs.assigned_partitions) == assignment.partitions
    assert _user_data(theirs.user_data) == assignment.user_data


# kafka-python lists partitions in whatever order it is given, repeats included.
UNORDERED = st.lists(st.tuples(TOPICS, st.lists(INT32, max_size=4)), max_size=5)


@given(
    version=st.integers(0, 3),
    topics=st.lists(TOPICS, max_size=5),
    user_data=USER_DATA,
    owned=UNORDERED,
    generation=INT32,
    rack=RACKS,
)
def test_decodes_kafka_pythons_subscription(
    version: int,
    topics: list[str],
    user_data: bytes | None,
    owned: list[tuple[str, list[int]]],
    generation: int,
    rack: str | None,
) -> None:
    cls = ConsumerProtocolSubscription
    encoded = cls(
        topics=topics,
        user_data=user_data,
        owned_partitions=[cls.TopicPartition(topic=t, partitions=ps) for t, ps in owned],
        generation_id=generation,
        rack_id=rack,
    ).encode(version=version)
    ours = decode_subscription(bytes(encoded))
    assert ours.version == version
    assert ours.topics == tuple(topics)
    assert ours.user_data == user_data
    owned_set = frozenset((t, p) for t, ps in owned for p in ps)
    assert ours.owned_partitions == (owned_set if version >= 1 else frozenset())
    assert ours.generation_id == (generation if version >= 2 else -1)
    assert ours.rack_id == (rack if version >= 3 else None)


@given(version=st.integers(0, 3), assigned=UNORDERED, user_data=USER_DATA)
def test_decodes_kafka_pythons_assignment(
    version: int, assigned: list[tuple[str, list[int]]], user_data: bytes | None
) -> None:
    cls = ConsumerProtocolAssignment
    encoded = cls(
        assigned_partitions=[cls.TopicPartition(topic=t, partitions=ps) for t, ps in assigned],
        user_data=user_data,
    ).encode(version=version)
    ours = decode_assignment(bytes(encoded))
    assert ours == Assignment(
        frozenset((t, p) for t, ps in assigned for p in ps), user_data, version
    )


# -- bad bytes ---------------------------------------------------------------------------------


def _decodes_or_protocol_error(decode: Any, data: bytes) -> None:
    """Any other exception escapes and fails the test."""
    with contextlib.suppress(ProtocolError):
        decode(data)


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_protocol_error(data: bytes) -> None:
    _decodes_or_protocol_error(decode_subscription, data)
    _decodes_or_protocol_error(decode_assignment, data)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid payload with a few bytes overwritten: reaches deeper than random bytes."""
    data = bytearray(
        draw(
            subscriptions().map(encode_subscription) | ASSIGNMENTS.map(encode_assignment),
        )
    )
    for _ in range(draw(st.integers(1, 4))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
    return bytes(data)


@settings(max_examples=300)
@given(mutated())
def test_mutated_payloads_decode_or_raise_protocol_error(data: bytes) -> None:
    _decodes_or_protocol_error(decode_subscription, data)
    _decodes_or_protocol_error(decode_assignment, data)


HUGE = [
    # topics count 2**31-1
    b"\x00\x00\x7f\xff\xff\xff\x00\x01a",
    # user data length 2**31-1
    b"\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff",
    # owned partitions: one topic with 2**31-1 partitions
    b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x01\x00\x01a\x7f\xff\xff\xff\x00",
    # rack string length 32767
    b"\x00\x03\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xffr",
    # a topic string of 32767 bytes announced, 1 given
    b"\x00\x00\x00\x00\x00\x01\x7f\xffa",
]
HUGE_ASSIGNMENTS = [
    b"\x00\x00\x7f\xff\xff\xff\x00\x01a",  # 2**31-1 topics
    b"\x00\x00\x00\x00\x00\x01\x00\x01a\x7f\xff\xff\xff",  # 2**31-1 partitions
    b"\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff",  # user data of 2**31-1 bytes
]


@pytest.mark.parametrize(
    ("decode", "data"),
    [(decode_subscription, d) for d in HUGE] + [(decode_assignment, d) for d in HUGE_ASSIGNMENTS],
)
def test_huge_counts_are_refused_without_allocating(decode: Any, data: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@pytest.mark.parametrize("count", [-2, -(2**31)])
def test_negative_counts_and_lengths_are_refused(count: int) -> None:
    n = struct.pack(">i", count)
    with pytest.raises(ProtocolError):
        decode_subscription(b"\x00\x00" + n)  # topics
    with pytest.raises(ProtocolError):
        decode_subscription(b"\x00\x00\x00\x00\x00\x00" + n)  # user data
    with pytest.raises(ProtocolError):
        decode_assignment(b"\x00\x00" + n)  # partitions


def test_null_topic_and_bad_utf8_are_refused() -> None:
    with pytest.raises(ProtocolError, match="null"):
        decode_subscription(b"\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff")
    with pytest.raises(ProtocolError, match="UTF-8"):
        decode_subscription(b"\x00\x00\x00\x00\x00\x01\x00\x01\xff\xff\xff\xff\xff")


def test_negative_versions_are_refused() -> None:
    with pytest.raises(ProtocolError):
        decode_subscription(b"\xff\xff" + SUB_V0[2:])
    with pytest.raises(ProtocolError):
        decode_assignment(b"\x80\x00" + ASSIGNMENT_BODY + b"\xff\xff\xff\xff")


def _subscription_boundaries(sub: Subscription) -> dict[int, Subscription]:
    """Prefix length -> what it decodes to: a newer client may stop after any whole field
    that a lower version would end with."""
    ends: dict[int, Subscription] = {}
    for lower in range(sub.version):
        at_lower = dataclasses.replace(
            sub,
            owned_partitions=sub.owned_partitions if lower >= 1 else frozenset(),
            generation_id=sub.generation_id if lower >= 2 else -1,
            rack_id=sub.rack_id if lower >= 3 else None,
        )
        ends[len(encode_subscription(dataclasses.replace(at_lower, version=lower)))] = at_lower
    return ends


@settings(max_examples=60)
@given(subscriptions())
def test_truncated_subscriptions_raise_protocol_error(sub: Subscription) -> None:
    encoded = encode_subscription(sub)
    boundaries = _subscription_boundaries(sub)
    for cut in range(len(encoded)):
        if cut in boundaries:
            assert decode_subscription(encoded[:cut]) == boundaries[cut]
        else:
            with pytest.raises(ProtocolError):
                decode_subscription(encoded[:cut])


@settings(max_examples=60)
@given(ASSIGNMENTS)
def test_truncated_assignments_raise_protocol_error(assignment: Assignment) -> None:
    encoded = encode_assignment(assignment)
    without_user_data = len(encoded) - 4 - len(assignment.user_data or b"")
    for cut in range(len(encoded)):
        if cut == 0:
            assert decode_assignment(b"") == Assignment(frozenset())
        elif cut == without_user_data:
            assert decode_assignment(encoded[:cut]) == dataclasses.replace(
                assignment, user_data=None
            )
        else:
            with pytest.raises(ProtocolError):
                decode_assignment(encoded[:cut])


def test_empty_assignment_bytes_are_an_empty_assignment() -> None:
    assert decode_assignment(b"") == Assignment(frozenset(), None, 0)


# -- versions ----------------------------------------------------------------------------------


@given(sub=subscriptions(version=SUBSCRIPTION_MAX_VERSION), tail=st.binary(max_size=16))
def test_newer_subscription_versions_decode_known_fields(sub: Subscription, tail: bytes) -> None:
    encoded = encode_subscription(sub)
    v5 = struct.pack(">h", 5) + encoded[2:] + tail
    assert decode_subscription(v5) == dataclasses.replace(sub, version=5)
    kafka = ConsumerProtocolSubscription.decode(v5)
    assert kafka.rack_id == sub.rack_id and kafka.generation_id == sub.generation_id


@given(assignment=ASSIGNMENTS, tail=st.binary(max_size=16))
def test_newer_assignment_versions_decode_known_fields(assignment: Assignment, tail: bytes) -> None:
    v5 = struct.pack(">h", 5) + encode_assignment(assignment)[2:] + tail
    assert decode_assignment(v5) == dataclasses.replace(assignment, version=5)


@given(sub=subscriptions(version=3), tail=st.binary(min_size=1, max_size=16))
def test_older_versions_ignore_trailing_bytes(sub: Subscription, tail: bytes) -> None:
    v0 = dataclasses.replace(
        sub, owned_partitions=frozenset(), generation_id=-1, rack_id=None, version=0
    )
    assert decode_subscription(encode_subscription(v0) + tail) == v0


@pytest.mark.parametrize("version", [4, 5, 100])
def test_encoding_a_newer_version_writes_the_newest_known(version: int) -> None:
    sub = Subscription(("a", "bc"), b"xy", OWNED, 7, "r1", version=version)
    assert encode_subscription(sub) == GOLDEN_SUBSCRIPTIONS[3][1]


def test_lower_versions_do_not_write_newer_fields() -> None:
    sub = Subscription(("a", "bc"), b"xy", OWNED, 7, "r1", version=0)
    assert encode_subscription(sub) == SUB_V0
