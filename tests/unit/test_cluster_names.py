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
    validate_topic_name,
)
from pafka.errors import InvalidTopicError

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
