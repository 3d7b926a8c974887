"""Topic name rules."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.names import (
    MAX_NAME_LENGTH,
    colliding_topics,
    collision_warning,
    is_valid_topic_name,
    unify_collision_chars,
    validate_group_id,
    validate_topic_name,
)
from pafka.errors import InvalidGroupIdError, InvalidTopicError

LEGAL = string.ascii_letters + string.digits + "._-"


@pytest.mark.parametrize("name", ["a", "A.b_c-1", "x" * 249, "...", "-", "__consumer_offsets"])
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        (".", "cannot be '.'"),
        ("..", "cannot be '..'"),
        ("x" * 250, "250 characters"),
        ("a b", "contains ' '"),
        ("a/b", "contains '/'"),
        ("ü", "contains 'ü'"),
        ("a\x00", "contains"),
        ("٣", "contains"),  # a non-ASCII digit
    ],
)
def test_illegal_topic_names(name: str, why: str) -> None:
    with pytest.raises(InvalidTopicError, match=why):
        validate_topic_name(name)


@given(st.text(max_size=300))
def test_validation_agrees_with_the_rule(name: str) -> None:
    expected = (
        1 <= len(name) <= MAX_NAME_LENGTH
        and name not in (".", "..")
        and all(c in LEGAL for c in name)
    )
    assert is_valid_topic_name(name) == expected


def test_collisions_are_optional_helpers() -> None:
    assert collision_warning("plain-name") is None
    assert "collide" in (collision_warning("a.b") or "")
    assert unify_collision_chars("a.b_c") == "a_b_c"
    assert colliding_topics("a.b", ["a_b", "a.b", "a-b", "a.c"]) == ["a_b"]


@pytest.mark.parametrize(
    "group", ["", ".", "..", "a/b", "x\x00", "x\x1f", "x\x80", "x\ud800", "x\ue000", "x\ufff0"]
)
def test_group_ids_that_cannot_name_a_znode_are_refused(group: str) -> None:
    with pytest.raises(InvalidGroupIdError):
        validate_group_id(group)


@pytest.mark.parametrize("group", ["g", "consumers-1", "über gruppe", "a.b_c", "x" * 255])
def test_group_ids_kafka_users_write_are_accepted(group: str) -> None:
    validate_group_id(group)


def test_a_number_outside_its_wire_type_is_the_callers_error() -> None:
    from pafka.errors import InvalidRequestError
    from pafka.protocol.messages import encode_request, request_class
    from pafka.protocol.versions import ApiKey

    cls = request_class(ApiKey.HEARTBEAT)[3]
    body = cls(group_id="g", generation_id=2**31, member_id="m", group_instance_id=None)
    with pytest.raises(InvalidRequestError, match="out of range"):
        encode_request(ApiKey.HEARTBEAT, 3, body, 1, "test")
