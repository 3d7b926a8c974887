"""Which batches a batch-format read returns, checked against the record reads' selection."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.client.batch_fetch import select_batches
from pafka.client.batch_reading import select_records
from pafka.client.isolation import AbortedTransaction, IsolationLevel, batch_filter
from pafka.records.batch import iter_batches
from pafka.records.control import ControlType
from pafka.records.encoding import decode_records
from tests.unit.test_client_isolation import Step, data_batch, marker, steps

COMMITTED = IsolationLevel.READ_COMMITTED
UNCOMMITTED = IsolationLevel.READ_UNCOMMITTED
ALL = 10**9


def chosen(
    data: bytes,
    offset: int,
    *,
    level: IsolationLevel = UNCOMMITTED,
    aborted: tuple[AbortedTransaction, ...] = (),
    end: int = ALL,
    max_records: int = ALL,
) -> tuple[list[int], list[int], int]:
    """(base offsets of the batches returned, offsets of their records a client keeps, next)."""
    chunks, next_offset = select_batches(
        data, offset, max_records=max_records, end=end, readable=batch_filter(level, aborted)
    )
    joined = b"".join(chunks)
    bases = [h.base_offset for _, h in iter_batches(joined)]
    kept = [
        r.offset
        for pos, h in iter_batches(joined)
        for r in decode_records(joined[pos : pos + h.size])
        if offset <= r.offset < end
    ]
    return bases, kept, next_offset


def test_the_first_batch_may_begin_before_the_offset() -> None:
    data = data_batch(0, 3) + data_batch(3, 3)
    assert chosen(data, 4) == ([3], [4, 5], 6)


def test_consecutive_batches_are_one_view_and_skipped_ones_split_them() -> None:
    data = data_batch(0, 2, 7, txn=True) + marker(2, 7, ControlType.COMMIT) + data_batch(3, 1)
    chunks, next_offset = select_batches(
        data, 0, max_records=ALL, end=ALL, readable=batch_filter(UNCOMMITTED, ())
    )
    assert len(chunks) == 2 and next_offset == 4
    whole = select_batches(
        data_batch(0, 2) + data_batch(2, 2), 0, max_records=ALL, end=ALL,
        readable=batch_filter(UNCOMMITTED, ()),
    )  # fmt: skip
    assert len(whole[0]) == 1


def test_max_records_ends_at_a_whole_batch() -> None:
    data = data_batch(0, 3) + data_batch(3, 3) + data_batch(6, 3)
    assert chosen(data, 1, max_records=3) == ([0, 3], [1, 2, 3, 4, 5], 6)


def test_nothing_at_or_past_the_end_and_a_truncated_tail_waits() -> None:
    data = data_batch(0, 2) + data_batch(2, 2)
    assert chosen(data, 0, end=2) == ([0], [0, 1], 2)
    assert chosen(data[:-5], 0) == ([0], [0, 1], 2)


def test_read_committed_drops_aborted_batches_and_markers() -> None:
    data = (
        data_batch(0, 3, 7, txn=True)
        + data_batch(3, 2, 8, txn=True)
        + marker(5, 7, ControlType.ABORT)
        + marker(6, 8, ControlType.COMMIT)
    )
    aborted = (AbortedTransaction(7, 0),)
    assert chosen(data, 0, level=COMMITTED, aborted=aborted) == ([3], [3, 4], 7)
    assert chosen(data, 0, aborted=aborted) == ([0, 3], [0, 1, 2, 3, 4], 7)


@settings(max_examples=300)
@given(steps, st.integers(0, 40), st.booleans())
def test_same_records_as_a_record_read(plan: list[Step], start: int, committed: bool) -> None:
    """Over logs of interleaved transactions, the records a client keeps from the batches
    are those a record read returns, and both read on from the same offset."""
    log, offset, aborted, open_first = b"", 0, [], {}
    for step in plan:
        if step.action == "write" or step.producer < 0:
            txn = step.producer >= 0
            log += data_batch(offset, step.count, step.producer, txn=txn)
            if txn:
                open_first.setdefault(step.producer, offset)
            offset += step.count
        elif step.producer in open_first:
            kind = ControlType.COMMIT if step.action == "commit" else ControlType.ABORT
            log += marker(offset, step.producer, kind)
            if kind is ControlType.ABORT:
                aborted.append(AbortedTransaction(step.producer, open_first[step.producer]))
            del open_first[step.producer]
            offset += 1
    level = COMMITTED if committed else UNCOMMITTED
    end = min(open_first.values(), default=offset) if committed else offset
    start = min(start, end)
    records, expected_next = select_records(
        log, start, max_records=ALL, high_watermark=end,
        readable=batch_filter(level, aborted),
    )  # fmt: skip
    _, kept, next_offset = chosen(log, start, level=level, aborted=tuple(aborted), end=end)
    assert kept == [r.offset for r in records]
    assert next_offset == expected_next
