"""The column write's decisions against the record-by-record write's: which partition each
record goes to, how a partition's records are cut into sends, and the answer for every mix of
written, failed and unsent records."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from pafka.client.partitioner import spread
from pafka.client.producer import OutgoingRecord
from pafka.errors import MessageTooLargeError, NotLeaderOrFollowerError
from services.gateway import column_produce
from services.gateway.column_produce import runs, shares
from services.gateway.plain_columns import PlainColumns
from services.gateway.produce import BATCH_TARGET_BYTES, Result, answer, batches


@given(st.integers(1, 300), st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_keyless_records_go_where_spread_puts_them(count: int, partitions: int, start: int) -> None:
    placed = [-1] * count
    for share in shares(count, None, partitions, start):
        for position in share.positions:
            assert placed[position] == -1
            placed[position] = share.partition
    assert placed == spread(start, count, partitions)


def test_a_named_partition_takes_every_record() -> None:
    [share] = shares(5, 3, 8, 1234)
    assert (share.partition, list(share.positions)) == (3, [0, 1, 2, 3, 4])


sizes = st.lists(st.integers(0, BATCH_TARGET_BYTES // 3), min_size=1, max_size=20)


@given(sizes, st.booleans(), st.integers(1, 4))
def test_runs_are_cut_as_produce_batches_cuts(lengths: list[int], keyed: bool, step: int) -> None:
    values = [b"v" * n for n in lengths]
    keys = [b"k" * (n // 2) for n in lengths] if keyed else None
    columns = PlainColumns(keys, values)
    records = columns.records()
    share = shares(len(values), None, step, 0)[0]
    cut = runs(columns, share, whole_fits=False)
    assert [list(run.positions) for run in cut] == batches(list(share.positions), records)
    assert {run.partition for run in cut} == {share.partition}


def _run(partition: int, positions: range, outcome: object) -> column_produce.Run:
    run = column_produce.Run(partition, positions)
    if isinstance(outcome, int):
        run.base_offset = outcome
    elif outcome == "held":
        run.error, run.held = MessageTooLargeError("held back"), True
    else:
        assert isinstance(outcome, Exception)
        run.error = outcome  # type: ignore[assignment]
    return run


def _by_record(count: int, sent: list[column_produce.Run]) -> list[Result]:
    """What produce.write reports for the same runs, record by record."""
    found: list[Result | None] = [None] * count
    for run in sent:
        for i, position in enumerate(run.positions):
            if run.error is None:
                assert run.base_offset is not None
                found[position] = Result(run.partition, run.base_offset + i)
            else:
                retriable = run.held or run.error.retriable
                found[position] = Result(run.partition, error=run.error, retriable=retriable)
    assert None not in found
    return found  # type: ignore[return-value]


outcomes = st.sampled_from(
    [0, 7, 1000, NotLeaderOrFollowerError("moved"), MessageTooLargeError("too large"), "held"]
)


@given(st.integers(1, 30), st.integers(1, 5), st.lists(outcomes, min_size=5, max_size=5))
def test_answers_are_the_record_by_record_answers(
    count: int, partitions: int, picked: list[object]
) -> None:
    sent = [
        _run(share.partition, share.positions, picked[n])
        for n, share in enumerate(shares(count, None, partitions, 3))
    ]
    columns_answer = column_produce.answer_runs(count, sent)
    records_answer = answer(_by_record(count, sent))
    assert columns_answer.status_code == records_answer.status_code
    assert json.loads(columns_answer.body) == json.loads(records_answer.body)
    assert columns_answer.body == records_answer.body


def test_a_partitions_runs_answer_in_order() -> None:
    sent = [_run(2, range(0, 3), 10), _run(2, range(3, 5), 40)]
    body = json.loads(column_produce.answer_runs(5, sent).body)
    assert [o["offset"] for o in body["offsets"]] == [10, 11, 12, 40, 41]
    assert {o["partition"] for o in body["offsets"]} == {2}
    assert OutgoingRecord(b"v") == PlainColumns(None, [b"v"]).records()[0]
