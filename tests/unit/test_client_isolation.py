"""read_committed on the consumer's side: which batches of a Fetch answer a read returns."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.client.batch_reading import select_records
from pafka.client.isolation import (
    AbortedTransaction,
    IsolationLevel,
    batch_filter,
    is_abort_marker,
)
from pafka.records.batch import assign_offsets, read_header
from pafka.records.control import ControlType, build_marker
from pafka.records.encoding import build_batch

COMMITTED = IsolationLevel.READ_COMMITTED
UNCOMMITTED = IsolationLevel.READ_UNCOMMITTED


def data_batch(offset: int, count: int, producer_id: int = -1, *, txn: bool = False) -> bytes:
    batch = build_batch(
        [(None, str(offset + i).encode(), []) for i in range(count)],
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=txn,
    )
    return assign_offsets(batch, offset)


def marker(offset: int, producer_id: int, kind: ControlType) -> bytes:
    """A control batch as a transaction coordinator has leaders write it."""
    built = build_marker(
        producer_id=producer_id,
        producer_epoch=0,
        commit=kind is ControlType.COMMIT,
        coordinator_epoch=3,
        timestamp_ms=0,
    )
    return assign_offsets(built, offset)


def values(data: bytes, level: IsolationLevel, aborted: list[AbortedTransaction], offset: int = 0,
           end: int = 1000) -> tuple[list[int], int]:  # fmt: skip
    records, next_offset = select_records(
        data, offset, max_records=1000, high_watermark=end,
        readable=batch_filter(level, aborted),
    )  # fmt: skip
    return [int(r.value or b"") for r in records], next_offset


def test_a_marker_is_not_a_record_at_either_level() -> None:
    data = data_batch(0, 3, 7, txn=True) + marker(3, 7, ControlType.COMMIT) + data_batch(4, 1)
    assert values(data, COMMITTED, []) == ([0, 1, 2, 4], 5)
    assert values(data, UNCOMMITTED, []) == ([0, 1, 2, 4], 5)


def test_an_aborted_transaction_is_skipped_by_read_committed_only() -> None:
    data = (
        data_batch(0, 3, 7, txn=True)
        + data_batch(3, 2, 8, txn=True)
        + marker(5, 7, ControlType.ABORT)
        + marker(6, 8, ControlType.COMMIT)
    )
    assert values(data, COMMITTED, [AbortedTransaction(7, 0)]) == ([3, 4], 7)
    assert values(data, UNCOMMITTED, [AbortedTransaction(7, 0)]) == ([0, 1, 2, 3, 4], 7)


def test_a_producer_is_aborted_only_until_its_abort_marker() -> None:
    data = (
        data_batch(0, 2, 7, txn=True)
        + marker(2, 7, ControlType.ABORT)
        + data_batch(3, 2, 7, txn=True)
        + marker(5, 7, ControlType.COMMIT)
    )
    assert values(data, COMMITTED, [AbortedTransaction(7, 0)]) == ([3, 4], 6)


def test_a_read_from_inside_an_aborted_transaction_still_skips_it() -> None:
    data = (
        data_batch(0, 2, 7, txn=True)
        + data_batch(2, 2, 7, txn=True)
        + marker(4, 7, ControlType.ABORT)
    )
    assert values(data, COMMITTED, [AbortedTransaction(7, 0)], offset=3) == ([], 5)


def test_the_read_stops_at_the_last_stable_offset() -> None:
    data = data_batch(0, 2) + data_batch(2, 2, 7, txn=True)
    assert values(data, COMMITTED, [], end=2) == ([0, 1], 2)


def test_an_idempotent_batch_of_an_aborting_producer_is_kept() -> None:
    """Kafka's consumer skips only transactional batches of an aborted producer."""
    data = data_batch(0, 1, 7, txn=True) + data_batch(1, 1, 7) + marker(2, 7, ControlType.ABORT)
    assert values(data, COMMITTED, [AbortedTransaction(7, 0)]) == ([1], 3)


def test_aborted_transactions_are_taken_by_first_offset_whatever_their_producer_ids() -> None:
    """Producers 2, 3, 1 open transactions at 0, 1, 2, and all abort: nothing is read."""
    data = (
        data_batch(0, 1, 2, txn=True)
        + data_batch(1, 1, 3, txn=True)
        + data_batch(2, 1, 1, txn=True)
        + marker(3, 1, ControlType.ABORT)
        + marker(4, 2, ControlType.ABORT)
        + marker(5, 3, ControlType.ABORT)
    )
    aborted = [AbortedTransaction(1, 2), AbortedTransaction(2, 0), AbortedTransaction(3, 1)]
    assert values(data, COMMITTED, aborted) == ([], 6)


def test_markers_are_told_apart_by_their_key() -> None:
    abort, commit = marker(0, 1, ControlType.ABORT), marker(0, 1, ControlType.COMMIT)
    assert is_abort_marker(abort, read_header(abort))
    assert not is_abort_marker(commit, read_header(commit))


@pytest.mark.parametrize("name", ["read_committed", "READ_UNCOMMITTED", " read_committed "])
def test_isolation_levels_parse_from_kafkas_spelling(name: str) -> None:
    assert IsolationLevel.parse(name).name == name.strip().upper()


def test_an_unknown_isolation_level_is_refused() -> None:
    with pytest.raises(ValueError, match="read_committed or read_uncommitted"):
        IsolationLevel.parse("serializable")


@dataclass(frozen=True)
class Step:
    producer: int  # -1: a plain write; else a transactional producer
    action: str  # "write", "commit", "abort"
    count: int


steps = st.lists(
    st.builds(
        Step,
        producer=st.sampled_from([-1, 1, 2, 3]),
        action=st.sampled_from(["write", "write", "commit", "abort"]),
        count=st.integers(1, 3),
    ),
    max_size=30,
)


@settings(max_examples=500)
@given(steps, st.integers(0, 40))
def test_read_committed_sees_exactly_the_committed_writes(plan: list[Step], start: int) -> None:
    """A log written by interleaved transactions; the aborted list the broker would answer
    (every aborted transaction's first offset); read_committed returns exactly the writes of
    committed transactions and plain writes, from any offset."""
    log = b""
    offset = 0
    open_txn: dict[int, list[int]] = {}  # producer -> offsets written in its transaction
    open_first: dict[int, int] = {}
    visible: set[int] = set()
    aborted: list[AbortedTransaction] = []
    for step in plan:
        if step.action == "write" or step.producer < 0:
            txn = step.producer >= 0
            log += data_batch(offset, step.count, step.producer, txn=txn)
            written = list(range(offset, offset + step.count))
            if txn:
                open_first.setdefault(step.producer, offset)
                open_txn.setdefault(step.producer, []).extend(written)
            else:
                visible.update(written)
            offset += step.count
        elif step.producer in open_txn:
            commit = step.action == "commit"
            log += marker(
                offset, step.producer, ControlType.COMMIT if commit else ControlType.ABORT
            )
            if commit:
                visible.update(open_txn[step.producer])
            else:
                aborted.append(AbortedTransaction(step.producer, open_first[step.producer]))
            del open_txn[step.producer]
            del open_first[step.producer]
            offset += 1
    # The last stable offset: the first offset of the oldest open transaction.
    end = min(open_first.values(), default=offset)
    # The broker answers with whole batches from the one holding ``start``, and the aborted
    # transactions overlapping the range; starting from the log's first batch is a superset.
    got, _ = values(log, COMMITTED, aborted, offset=min(start, end), end=end)
    assert got == sorted(o for o in visible if min(start, end) <= o < end)
