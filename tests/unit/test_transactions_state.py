"""The transaction state machine: every (from, to) pair against Kafka 2.8's
``TransactionMetadata.validPreviousStates``, and ``__consumer_offsets`` partitions as Java
computes them."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.states import IllegalStateTransitionError
from pafka.groups.offsets_partition import java_string_hash, offsets_partition
from pafka.transactions.state import TXN_TRANSITIONS, TxnState, txn_transition

T = TxnState

# Written out from Kafka's table, independently of the module's.
KAFKA_TXN = {
    (T.EMPTY, T.EMPTY),
    (T.COMPLETE_COMMIT, T.EMPTY),
    (T.COMPLETE_ABORT, T.EMPTY),
    (T.ONGOING, T.ONGOING),
    (T.EMPTY, T.ONGOING),
    (T.COMPLETE_COMMIT, T.ONGOING),
    (T.COMPLETE_ABORT, T.ONGOING),
    (T.ONGOING, T.PREPARE_COMMIT),
    (T.ONGOING, T.PREPARE_ABORT),
    (T.PREPARE_EPOCH_FENCE, T.PREPARE_ABORT),
    (T.PREPARE_COMMIT, T.COMPLETE_COMMIT),
    (T.PREPARE_ABORT, T.COMPLETE_ABORT),
    (T.EMPTY, T.DEAD),
    (T.COMPLETE_ABORT, T.DEAD),
    (T.COMPLETE_COMMIT, T.DEAD),
    (T.ONGOING, T.PREPARE_EPOCH_FENCE),
}


def test_table_matches_kafka() -> None:
    assert set(TXN_TRANSITIONS) == set(T)
    assert {(s, t) for t, ss in TXN_TRANSITIONS.items() for s in ss} == KAFKA_TXN


@pytest.mark.parametrize("pair", list(itertools.product(T, T)), ids=str)
def test_every_pair(pair: tuple[TxnState, TxnState]) -> None:
    current, target = pair
    if pair in KAFKA_TXN:
        assert txn_transition(current, target, "t") is target
    else:
        with pytest.raises(IllegalStateTransitionError) as caught:
            txn_transition(current, target, "t")
        assert caught.value.current is current and caught.value.target is target


def test_expiration_allowed_as_kafka() -> None:
    assert {s for s in T if s.expiration_allowed} == {T.EMPTY, T.COMPLETE_COMMIT, T.COMPLETE_ABORT}


# Values of "...".hashCode() as a JVM (OpenJDK 17) printed them.
JAVA_HASHES = {
    "": 0,
    "hello": 99162322,
    "Aa": 2112,
    "BB": 2112,
    "polygenelubricants": -(2**31),
    "test-group": 627841412,
    "my-txn-group": -2050187653,
    "é": 233,
    "😀": 1772899,
}


@pytest.mark.parametrize(("text", "expected"), sorted(JAVA_HASHES.items()))
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_min_value_maps_to_partition_zero() -> None:
    # Utils.abs(Integer.MIN_VALUE) is 0, not Integer.MIN_VALUE (Math.abs).
    assert offsets_partition("polygenelubricants") == 0
    assert offsets_partition("hello") == 99162322 % 50


@given(st.text(max_size=40))
def test_partition_in_range_and_hash_is_int32(text: str) -> None:
    assert -(2**31) <= java_string_hash(text) < 2**31
    assert 0 <= offsets_partition(text) < 50
