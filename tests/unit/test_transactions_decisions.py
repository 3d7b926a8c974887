"""The transaction coordinator's decisions against Kafka 2.8's ``TransactionCoordinator``, and
a random sequence of requests that never leaves the transition table."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    KafkaApiError,
    ProducerFencedError,
)
from pafka.groups.offsets_partition import offsets_partition
from pafka.protocol.versions import ApiKey
from pafka.transactions import decisions as d
from pafka.transactions.metadata import OFFSETS_TOPIC, TxnMetadata
from pafka.transactions.state import TXN_TRANSITIONS, TxnState

S = TxnState
TP = ("t", 0)


def initialised(epoch: int = 0, producer_id: int = 7) -> TxnMetadata:
    fresh = d.new_transactional_id("tx", producer_id, 60_000, 0)
    meta = d.init_producer_id(fresh, 60_000, None, 1).metadata
    return TxnMetadata(**{**meta.__dict__, "producer_epoch": epoch})


def test_new_id_starts_at_epoch_zero() -> None:
    assert d.needs_new_producer_id(None, None)
    fresh = d.new_transactional_id("tx", 7, 60_000, 0)
    out = d.init_producer_id(fresh, 60_000, None, 5)
    assert (out.metadata.producer_id, out.metadata.producer_epoch, out.fenced) == (7, 0, False)
    assert out.metadata.state is S.EMPTY


def test_reinit_bumps_epoch_and_fences_ongoing_first() -> None:
    meta = initialised()
    assert d.init_producer_id(meta, 60_000, None, 2).metadata.producer_epoch == 1
    ongoing = d.add_partitions(meta, 7, 0, [TP], 3)
    assert ongoing is not None and ongoing.state is S.ONGOING and ongoing.start_ms == 3
    out = d.init_producer_id(ongoing, 60_000, None, 4)
    assert out.fenced and out.metadata.state is S.PREPARE_ABORT
    assert out.metadata.producer_epoch == 1 and out.metadata.partitions == {TP}
    with pytest.raises(ConcurrentTransactionsError):
        d.init_producer_id(out.metadata, 60_000, None, 5)
    done = d.complete(out.metadata, 6)
    assert done.state is S.COMPLETE_ABORT and not done.partitions
    assert d.init_producer_id(done, 60_000, None, 7).metadata.producer_epoch == 2


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    meta = initialised(epoch=32766)
    assert d.needs_new_producer_id(meta, None)
    out = d.init_producer_id(meta, 60_000, None, 2, new_producer_id=99)
    assert (out.metadata.producer_id, out.metadata.producer_epoch) == (99, 0)
    assert out.metadata.last_producer_id == 7


def test_kip360_producer_id_and_epoch() -> None:
    meta = initialised(epoch=3)
    with pytest.raises(InvalidRequestError):
        d.expected_producer(-1, 3)
    assert d.expected_producer(-1, -1) is None
    with pytest.raises(ProducerFencedError):
        d.init_producer_id(meta, 60_000, d.ProducerIdAndEpoch(8, 3), 2)
    bumped = d.init_producer_id(meta, 60_000, d.ProducerIdAndEpoch(7, 3), 2).metadata
    assert (bumped.producer_epoch, bumped.last_producer_epoch) == (4, 3)
    # The retry of that bump, its answer lost: the same epoch again.
    again = d.init_producer_id(bumped, 60_000, d.ProducerIdAndEpoch(7, 3), 3).metadata
    assert again.producer_epoch == 4
    with pytest.raises(ProducerFencedError):
        d.init_producer_id(bumped, 60_000, d.ProducerIdAndEpoch(7, 1), 3)


def test_timeout_bounds() -> None:
    d.check_timeout(900_000, 900_000)
    for bad in (0, -1, 900_001):
        with pytest.raises(InvalidTransactionTimeoutError):
            d.check_timeout(bad, 900_000)


def test_add_partitions_checks_producer() -> None:
    meta = initialised()
    with pytest.raises(InvalidProducerIdMappingError):
        d.add_partitions(None, 7, 0, [TP], 1)
    with pytest.raises(InvalidProducerIdMappingError):
        d.add_partitions(meta, 8, 0, [TP], 1)
    with pytest.raises(ProducerFencedError):
        d.add_partitions(meta, 7, 1, [TP], 1)
    ongoing = d.add_partitions(meta, 7, 0, [TP], 1)
    assert ongoing is not None
    assert d.add_partitions(ongoing, 7, 0, [TP], 2) is None  # already in: nothing to write
    more = d.add_partitions(ongoing, 7, 0, [("t", 1)], 9)
    assert more is not None and more.partitions == {TP, ("t", 1)} and more.start_ms == 1


def test_add_offsets_adds_the_groups_partition() -> None:
    meta = d.add_offsets(initialised(), 7, 0, "my-txn-group", 1)
    assert meta is not None
    assert meta.partitions == {(OFFSETS_TOPIC, offsets_partition("my-txn-group"))}
    assert meta.groups == {"my-txn-group"}
    assert d.add_offsets(meta, 7, 0, "my-txn-group", 2) is None
    assert meta.data_partitions == frozenset()


def test_end_txn_as_kafka() -> None:
    meta = initialised()
    with pytest.raises(InvalidTxnStateError):
        d.end_txn(meta, 7, 0, True, 1)  # Empty: nothing to commit
    ongoing = d.add_partitions(meta, 7, 0, [TP], 1)
    assert ongoing is not None
    with pytest.raises(ProducerFencedError):
        d.end_txn(ongoing, 7, 1, True, 2)
    prepared = d.end_txn(ongoing, 7, 0, True, 2)
    assert prepared is not None and prepared.state is S.PREPARE_COMMIT
    with pytest.raises(ConcurrentTransactionsError):
        d.end_txn(prepared, 7, 0, True, 3)  # retried while markers are written
    with pytest.raises(InvalidTxnStateError):
        d.end_txn(prepared, 7, 0, False, 3)
    with pytest.raises(ConcurrentTransactionsError):
        d.add_partitions(prepared, 7, 0, [TP], 3)
    done = d.complete(prepared, 4)
    assert d.end_txn(done, 7, 0, True, 5) is None  # retried after completion: success
    with pytest.raises(InvalidTxnStateError):
        d.end_txn(done, 7, 0, False, 5)


def test_kip588_error_by_version() -> None:
    fenced = ProducerFencedError.code
    assert d.wire_error(fenced, ApiKey.END_TXN, 1) == InvalidProducerEpochError.code
    assert d.wire_error(fenced, ApiKey.END_TXN, 2) == fenced
    assert d.wire_error(fenced, ApiKey.INIT_PRODUCER_ID, 3) == InvalidProducerEpochError.code
    assert d.wire_error(fenced, ApiKey.INIT_PRODUCER_ID, 4) == fenced
    assert d.wire_error(fenced, ApiKey.ADD_PARTITIONS_TO_TXN, 1) == InvalidProducerEpochError.code
    assert d.wire_error(fenced, ApiKey.ADD_OFFSETS_TO_TXN, 2) == fenced
    assert d.wire_error(0, ApiKey.END_TXN, 0) == 0


def test_timeout_and_expiry() -> None:
    ongoing = d.add_partitions(initialised(), 7, 0, [TP], 100)
    assert ongoing is not None
    assert not d.timed_out(ongoing, 100 + 60_000)
    assert d.timed_out(ongoing, 100 + 60_001)
    aborted = d.fence(ongoing, 60_200)
    assert aborted.state is S.PREPARE_ABORT and aborted.producer_epoch == 1
    assert not d.expired(ongoing, 10**12, 1000)
    done = d.complete(aborted, 60_300)
    assert d.expired(done, 61_300, 1000) and not d.expired(done, 61_299, 1000)
    assert d.dead(done).state is S.DEAD


# -- a random sequence of requests -------------------------------------------------------------

requests = st.lists(
    st.one_of(
        st.tuples(st.just("init"), st.booleans()),
        st.tuples(st.just("add"), st.integers(0, 2)),
        st.tuples(st.just("offsets"), st.sampled_from(["g1", "g2"])),
        st.tuples(st.just("end"), st.booleans()),
        st.tuples(st.just("stale_end"), st.booleans()),
        st.tuples(st.just("complete"), st.just(0)),
        st.tuples(st.just("timeout"), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300)
@given(requests)
def test_random_requests_keep_the_table(steps: list[tuple[str, object]]) -> None:
    """Whatever clients ask in whatever order, every stored state follows the table, epochs
    never go down, and a Prepare state only ever completes."""
    meta = d.new_transactional_id("tx", 1, 1000, 0)
    next_pid = 2
    now = 0
    for op, arg in steps:
        now += 10
        before = meta
        try:
            out: TxnMetadata | None
            if op == "init":
                expected = d.ProducerIdAndEpoch(meta.producer_id, meta.producer_epoch)
                use = expected if arg and meta.producer_epoch >= 0 else None
                pid = None
                if d.needs_new_producer_id(meta, use):
                    pid, next_pid = next_pid, next_pid + 1
                out = d.init_producer_id(meta, 1000, use, now, pid).metadata
            elif op == "add":
                tp = ("t", int(str(arg)))
                out = d.add_partitions(meta, meta.producer_id, meta.producer_epoch, [tp], now)
            elif op == "offsets":
                out = d.add_offsets(meta, meta.producer_id, meta.producer_epoch, str(arg), now)
            elif op == "end":
                out = d.end_txn(meta, meta.producer_id, meta.producer_epoch, bool(arg), now)
            elif op == "stale_end":
                out = d.end_txn(meta, meta.producer_id, meta.producer_epoch - 1, bool(arg), now)
            elif op == "complete":
                out = d.complete(meta, now) if meta.state.completing else None
            else:
                out = d.fence(meta, now) if d.timed_out(meta, now + 2000) else None
        except KafkaApiError:
            continue
        if out is None:
            continue
        meta = out
        if meta.state is not before.state or op != "init":
            allowed = TXN_TRANSITIONS[meta.state] | (
                {S.ONGOING} if meta.state is S.PREPARE_ABORT else set()
            )
            assert before.state in allowed
        assert meta.state is not S.PREPARE_EPOCH_FENCE and meta.state is not S.DEAD
        if meta.producer_id == before.producer_id:
            assert meta.producer_epoch >= before.producer_epoch
        if before.state.completing:
            assert meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        if meta.state is S.ONGOING:
            assert meta.partitions and meta.start_ms >= 0
        if meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY):
            assert not meta.partitions and not meta.groups
