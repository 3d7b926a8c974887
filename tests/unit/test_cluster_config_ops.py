"""AlterConfigs / IncrementalAlterConfigs over override maps, and dynamic broker configs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster import broker_config
from pafka.cluster.config_ops import ConfigOp, OpType, apply_incremental, replace_all
from pafka.errors import InvalidRequestError

LIST_KEYS = {"cleanup.policy"}
DEFAULTS = {"cleanup.policy": "delete"}
keys = st.sampled_from(["retention.ms", "segment.bytes", "cleanup.policy", "flush.ms"])
values = st.text("0123456789", min_size=1, max_size=6)
overrides = st.dictionaries(keys, values)


def test_replace_all_drops_null_values_and_refuses_duplicates() -> None:
    assert replace_all([("a", "1"), ("b", None)]) == {"a": "1"}
    with pytest.raises(InvalidRequestError):
        replace_all([("a", "1"), ("a", "2")])


@given(overrides, keys, values)
def test_set_then_delete(current: dict[str, str], key: str, value: str) -> None:
    after_set = apply_incremental(current, [ConfigOp(key, OpType.SET, value)], LIST_KEYS, {})
    assert after_set == {**current, key: value}
    after_delete = apply_incremental(after_set, [ConfigOp(key, OpType.DELETE, None)], LIST_KEYS, {})
    assert key not in after_delete
    assert {k: v for k, v in after_delete.items()} == {k: v for k, v in current.items() if k != key}


def test_append_starts_from_the_default_and_keeps_order_without_duplicates() -> None:
    op = ConfigOp("cleanup.policy", OpType.APPEND, "compact")
    assert apply_incremental({}, [op], LIST_KEYS, DEFAULTS) == {"cleanup.policy": "delete,compact"}
    twice = apply_incremental({"cleanup.policy": "delete,compact"}, [op], LIST_KEYS, DEFAULTS)
    assert twice == {"cleanup.policy": "delete,compact"}


def test_subtract_removes_items() -> None:
    op = ConfigOp("cleanup.policy", OpType.SUBTRACT, "delete")
    current = {"cleanup.policy": "delete,compact"}
    assert apply_incremental(current, [op], LIST_KEYS, DEFAULTS) == {"cleanup.policy": "compact"}


@given(
    st.lists(st.sampled_from(["delete", "compact"]), max_size=3),
    st.sampled_from(["delete", "compact"]),
)
def test_append_then_subtract_leaves_no_trace_of_the_item(start: list[str], item: str) -> None:
    current = {"cleanup.policy": ",".join(dict.fromkeys(start))} if start else {}
    appended = apply_incremental(
        current, [ConfigOp("cleanup.policy", OpType.APPEND, item)], LIST_KEYS, DEFAULTS
    )
    assert item in appended["cleanup.policy"].split(",")
    removed = apply_incremental(
        appended, [ConfigOp("cleanup.policy", OpType.SUBTRACT, item)], LIST_KEYS, DEFAULTS
    )
    assert item not in removed["cleanup.policy"].split(",")


@pytest.mark.parametrize(
    "ops",
    [
        [ConfigOp("retention.ms", OpType.APPEND, "1")],  # not a list config
        [ConfigOp("retention.ms", OpType.SUBTRACT, "1")],
        [ConfigOp("retention.ms", 9, "1")],  # no such operation
        [ConfigOp("retention.ms", OpType.SET, None)],
        [ConfigOp("retention.ms", OpType.SET, "1"), ConfigOp("retention.ms", OpType.DELETE, None)],
    ],
)
def test_bad_requests_are_invalid_request(ops: list[ConfigOp]) -> None:
    with pytest.raises(InvalidRequestError):
        apply_incremental({}, ops, LIST_KEYS, DEFAULTS)


def test_dynamic_broker_configs_pafka_uses_are_accepted_others_refused() -> None:
    broker_config.validate({"log.retention.ms": "1000", "message.max.bytes": "2048"})
    with pytest.raises(InvalidRequestError, match="dynamically"):
        broker_config.validate({"num.io.threads": "8"})
    with pytest.raises(InvalidRequestError):
        broker_config.validate({"log.retention.ms": "soon"})
    assert broker_config.topic_defaults({"log.roll.ms": "5"}) == {"segment.ms": "5"}
    assert broker_config.effective({"a": "1", "b": "1"}, {"b": "2"}) == {"a": "1", "b": "2"}


def test_a_broker_answers_only_for_itself_or_the_default() -> None:
    assert broker_config.validate_entity("", 1) is None
    assert broker_config.validate_entity("<default>", 1) is None
    assert broker_config.validate_entity("1", 1) == 1
    with pytest.raises(InvalidRequestError):
        broker_config.validate_entity("2", 1)
    with pytest.raises(InvalidRequestError):
        broker_config.validate_entity("x", 1)
