"""OffsetDelete's decision (KIP-496): worked examples and properties over every group state."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import GroupIdNotFoundError, GroupSubscribedToTopicError, NonEmptyGroupError
from pafka.groups.offset_deletion import deletable_offsets
from pafka.groups.state import GroupState

TOPICS = ["a", "b", "c"]
partitions = st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 3)), max_size=8)
subscriptions = st.none() | st.frozensets(st.sampled_from(TOPICS))
ACTIVE = [GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE]


def test_examples() -> None:
    assert deletable_offsets("g", GroupState.EMPTY, True, frozenset({"a"}), [("a", 0)]) == {
        ("a", 0): None
    }
    found = deletable_offsets("g", GroupState.STABLE, True, frozenset({"a"}), [("a", 0), ("b", 1)])
    assert isinstance(found[("a", 0)], GroupSubscribedToTopicError)
    assert found[("b", 1)] is None
    with pytest.raises(GroupIdNotFoundError):
        deletable_offsets("g", GroupState.DEAD, True, frozenset(), [("a", 0)])
    with pytest.raises(NonEmptyGroupError):
        deletable_offsets("g", GroupState.STABLE, False, frozenset(), [("a", 0)])


@given(tps=partitions, subscribed=subscriptions, state=st.sampled_from(ACTIVE))
def test_an_active_consumer_group_keeps_exactly_its_subscribed_topics(
    tps: list[tuple[str, int]], subscribed: frozenset[str] | None, state: GroupState
) -> None:
    found = deletable_offsets("g", state, True, subscribed, tps)
    assert set(found) == set(tps)
    for tp, error in found.items():
        consumed = subscribed is None or tp[0] in subscribed
        assert (error is not None) == consumed
        assert error is None or error.code == 86


@given(tps=partitions, subscribed=subscriptions, consumer=st.booleans())
def test_an_empty_group_deletes_everything_asked(
    tps: list[tuple[str, int]], subscribed: frozenset[str] | None, consumer: bool
) -> None:
    found = deletable_offsets("g", GroupState.EMPTY, consumer, subscribed, tps)
    assert found == dict.fromkeys(set(tps))
