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
    assert table.check(1, 0, 0) is None
    for i in range(7):
        record(table, 1, 0, i * 2, 2, 100 + i * 2)
    duplicate = table.check(1, 0, 12)
    assert duplicate is not None and duplicate.first_offset == 112
    assert table.check(1, 0, 4) is not None  # fifth from the end
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 0, 2)  # older than the five kept
    assert table.check(1, 0, 14) is None


def test_gaps_and_fencing() -> None:
    table = ProducerStateTable()
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 0, 3)
    record(table, 1, 3, 0, 1, 0)
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 3, 5)
    with pytest.raises(InvalidProducerEpochError):
        table.check(1, 2, 1)
    assert table.check(1, 4, 0) is None
    with pytest.raises(OutOfOrderSequenceError):
        table.check(1, 4, 1)


def test_truncation_forgets_batches() -> None:
    table = ProducerStateTable()
    record(table, 1, 0, 0, 1, 10)
    record(table, 1, 0, 1, 1, 11)
    table.truncate_to(11)
    assert table.check(1, 0, 1) is None
