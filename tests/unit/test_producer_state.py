"""Idempotent producer sequence rules."""

from __future__ import annotations

import pytest

from pafka.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from services.broker.producer_state import BatchRecord, ProducerStateTable


def record(
    table: ProducerStateTable, pid: int, epoch: int, first: int, count: int, offset: int
) -> None:
    table.record(pid, epoch, BatchRecord(first, first + count - 1, offset, offset + count - 1, 0))


def test_duplicates_of_the_last_five_batches_return_the_original() -> None:
    table = ProducerStateTable()
    assert table.check(1, 0, 0, 1) is None
    for i in range(7):
        record(table, 1, 0, i * 2, 2, 100 + i * 2)
    duplicate = table.check(1, 0, 12, 13)
    assert duplicate is not None and duplicate.first_offset == 112
    assert table.check(1, 0, 4, 5) is not None  # fifth from the end
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 0, 2, 3)  # older than the five kept
    assert table.check(1, 0, 14, 15) is None


def test_a_duplicate_matches_both_ends_of_a_written_batch() -> None:
    """Kafka's findDuplicateBatch: same first and last sequence. A batch that starts where a
    written one did but ends elsewhere is out of order, never acknowledged with the written
    batch's offsets (its other records were never appended)."""
    table = ProducerStateTable()
    record(table, 1, 0, 0, 5, 100)
    record(table, 1, 0, 5, 5, 105)
    assert table.check(1, 0, 5, 9) is not None
    for last in (5, 8, 10, 14):
        with pytest.raises(OutOfOrderSequenceError):
            table.check(1, 0, 5, last)
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 0, 0, 9)
    assert table.check(1, 0, 10, 30) is None


def test_a_producer_unknown_here_may_start_at_any_sequence() -> None:
    """Kafka 2.5+ (KIP-360): no state for the producer (its records deleted by retention or
    DeleteRecords, or never seen by this leader) means no sequence to continue."""
    table = ProducerStateTable()
    assert table.check(1, 0, 3, 3) is None
    record(table, 1, 0, 3, 1, 0)
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 0, 5, 5)


def test_gaps_and_fencing() -> None:
    table = ProducerStateTable()
    record(table, 1, 3, 0, 1, 0)
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 3, 5, 5)
    with pytest.raises(InvalidProducerEpochError):
        table.check(1, 2, 1, 1)
    assert table.check(1, 4, 0, 0) is None
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 4, 1, 1)


def test_truncation_forgets_batches() -> None:
    table = ProducerStateTable()
    record(table, 1, 0, 0, 1, 10)
    record(table, 1, 0, 1, 1, 11)
    table.truncate_to(11)
    assert table.check(1, 0, 1, 1) is None
