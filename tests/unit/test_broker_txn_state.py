"""Open transactions, markers and the last stable offset of a partition (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import InvalidTxnStateError, TransactionCoordinatorFencedError
from services.broker.txn_state import CompletedTxn, TxnState


def test_a_transaction_opens_at_its_first_batch_and_holds_back_the_stable_offset() -> None:
    state = TxnState()
    assert state.last_stable_offset(10) == 10
    state.on_data(1, 10, is_transactional=True)
    state.on_data(1, 12, is_transactional=True)
    state.on_data(2, 14, is_transactional=False)
    assert state.first_unstable_offset(20) == 10
    assert state.last_stable_offset(20) == 10
    assert state.last_stable_offset(5) == 5
    assert state.on_marker(1, 16, is_abort=True, coordinator_epoch=0) == CompletedTxn(
        1, 10, 16, True
    )
    assert state.last_stable_offset(20) == 20


def test_a_transaction_is_unstable_until_its_marker_is_replicated() -> None:
    state = TxnState()
    state.on_data(1, 4, is_transactional=True)
    state.on_marker(1, 9, is_abort=False, coordinator_epoch=0)
    assert state.last_stable_offset(8) == 4
    assert state.last_stable_offset(9) == 4
    assert state.last_stable_offset(10) == 10
    assert state.unreplicated == []


def test_an_open_transaction_whose_start_retention_deleted_holds_at_the_log_start() -> None:
    state = TxnState()
    state.on_data(1, 2, is_transactional=True)
    assert state.last_stable_offset(10, log_start_offset=5) == 5
    assert state.last_stable_offset(4, log_start_offset=0) == 2


def test_a_marker_without_a_transaction_completes_nothing() -> None:
    state = TxnState()
    assert state.on_marker(1, 0, is_abort=False, coordinator_epoch=0) is None


def test_non_transactional_batch_inside_a_transaction_is_refused() -> None:
    state = TxnState()
    state.on_data(1, 0, is_transactional=True)
    with pytest.raises(InvalidTxnStateError):
        state.check_data(1, is_transactional=False)
    state.check_data(1, is_transactional=True)
    state.check_data(2, is_transactional=False)


def test_older_coordinator_epoch_is_fenced() -> None:
    state = TxnState()
    state.on_data(1, 0, is_transactional=True)
    state.on_marker(1, 3, is_abort=False, coordinator_epoch=4)
    with pytest.raises(TransactionCoordinatorFencedError):
        state.check_marker(1, 3)
    state.check_marker(1, 4)
    state.check_marker(2, 0)


def test_index_entry_stable_offset_is_the_oldest_other_open_transaction() -> None:
    state = TxnState()
    state.on_data(1, 0, is_transactional=True)
    state.on_data(2, 3, is_transactional=True)
    done = state.on_marker(1, 5, is_abort=True, coordinator_epoch=0)
    assert done is not None and state.stable_offset_after(done) == 3
    done = state.on_marker(2, 6, is_abort=True, coordinator_epoch=0)
    assert done is not None and state.stable_offset_after(done) == 7


@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from(["data", "txn", "commit", "abort"])),
        max_size=40,
    )
)
def test_stable_offset_is_the_oldest_open_transaction_start(
    ops: list[tuple[int, str]],
) -> None:
    """Against a model: the open transactions are exactly those begun and not yet ended."""
    state = TxnState()
    model: dict[int, int] = {}
    for offset, (pid, op) in enumerate(ops):
        if op in ("data", "txn"):
            if pid in model and op == "data":
                with pytest.raises(InvalidTxnStateError):
                    state.check_data(pid, is_transactional=False)
                continue
            state.on_data(pid, offset, is_transactional=op == "txn")
            if op == "txn":
                model.setdefault(pid, offset)
        else:
            done = state.on_marker(pid, offset, is_abort=op == "abort", coordinator_epoch=0)
            first = model.pop(pid, None)
            assert (done is None) == (first is None)
            if done is not None:
                assert done.first_offset == first and done.is_aborted == (op == "abort")
        high_watermark = offset + 1
        expected = min([*model.values(), high_watermark])
        assert state.last_stable_offset(high_watermark) == expected
