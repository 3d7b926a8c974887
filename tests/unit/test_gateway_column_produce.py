"""The column write's decisions against the record-by-record write's: which partition each
record goes to, how a request's records are cut into sends, and the answer for every mix of
written, failed and unsent records."""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from pafka.client.producer import OutgoingRecord
from pafka.errors import MessageTooLargeError, NotLeaderOrFollowerError
from services.gateway import column_produce
from services.gateway.column_produce import Run, runs, shares
from services.gateway.formats import ProduceBody
from services.gateway.plain_columns import PlainColumns
from services.gateway.produce import (
    BATCH_TARGET_BYTES,
    RECORD_OVERHEAD_BYTES,
    KeylessTurns,
    Result,
    Turns,
    answer,
    batches,
    choose_partitions,
)

sizes = st.lists(st.integers(0, BATCH_TARGET_BYTES // 3), min_size=1, max_size=20)


@given(sizes, st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_keyless_records_go_where_the_record_by_record_write_puts_them(
    lengths: list[int], partitions: int, start: int
) -> None:
    columns = PlainColumns(None, [b"v" * n for n in lengths])
    records = columns.records()
    turns, column_turns = Turns(start), Turns(start)
    body = ProduceBody(records, [None] * len(records))
    expected = choose_partitions(body, None, partitions, turns)
    cut = runs(columns, Run(0, range(len(records))), whole_fits=False)
    placed = [-1] * len(records)
    for share in shares(cut, None, partitions, column_turns.take(len(cut))):
        assert len({run.partition for run in share}) == 1
        for run in share:
            for position in run.positions:
                assert placed[position] == -1
                placed[position] = run.partition
    assert placed == expected
    # Both take as many turns: the next request starts at the same partition either way.
    assert column_turns.next == turns.next


def test_keyless_requests_take_the_partitions_in_turn() -> None:
    turns = Turns()
    small = ProduceBody([OutgoingRecord(b"v")] * 3, [None] * 3)
    chosen = [choose_partitions(small, None, 3, turns) for _ in range(4)]
    assert chosen == [[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 0, 0]]
    # A request of more than a batch: each batch to the next partition, the next request after.
    half = BATCH_TARGET_BYTES // 2 - RECORD_OVERHEAD_BYTES - 1  # two records to a batch
    large = [OutgoingRecord(b"v" * half)] * 5
    assert choose_partitions(ProduceBody(large, [None] * 5), None, 3, turns) == [1, 1, 2, 2, 0]
    assert choose_partitions(small, None, 3, turns) == [1, 1, 1]


def test_each_topic_takes_its_own_turns() -> None:
    """Requests alternating between two topics of two partitions: each topic's still take
    both partitions in turn (one counter for all would give each topic one partition)."""
    keyless = KeylessTurns()
    one = ProduceBody([OutgoingRecord(b"v")], [None])
    placed: dict[str, list[int]] = {"a": [], "b": []}
    for _ in range(4):
        for topic in ("a", "b"):
            placed[topic] += choose_partitions(one, None, 2, keyless.of(topic))
    for chosen in placed.values():
        assert chosen in ([0, 1, 0, 1], [1, 0, 1, 0])


def test_topics_past_the_limit_are_forgotten_not_kept() -> None:
    keyless = KeylessTurns()
    for n in range(KeylessTurns.MAX_TOPICS + 5):
        keyless.of(f"t{n}")
    assert len(keyless._topics) <= KeylessTurns.MAX_TOPICS


def test_a_named_partition_takes_every_run() -> None:
    cut = [Run(0, range(0, 3)), Run(0, range(3, 5))]
    [share] = shares(cut, 3, 8, 1234)
    assert [(run.partition, list(run.positions)) for run in share] == [(3, [0, 1, 2]), (3, [3, 4])]


def test_runs_that_come_round_to_a_partition_again_go_in_order() -> None:
    cut = [Run(0, range(n, n + 1)) for n in range(5)]
    found = [[(r.partition, r.positions.start) for r in share] for share in shares(cut, None, 2, 1)]
    assert found == [[(1, 0), (1, 2), (1, 4)], [(0, 1), (0, 3)]]


@given(sizes, st.booleans(), st.integers(1, 4))
def test_runs_are_cut_as_produce_batches_cuts(lengths: list[int], keyed: bool, step: int) -> None:
    values = [b"v" * n for n in lengths]
    keys = [b"k" * (n // 2) for n in lengths] if keyed else None
    columns = PlainColumns(keys, values)
    records = columns.records()
    share = Run(2, range(0, len(values), step))
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


@given(
    st.lists(st.integers(1, 8), min_size=1, max_size=5),
    st.integers(1, 5),
    st.lists(outcomes, min_size=5, max_size=5),
)
def test_answers_are_the_record_by_record_answers(
    run_lengths: list[int], partitions: int, picked: list[object]
) -> None:
    ends = [0]
    for length in run_lengths:
        ends.append(ends[-1] + length)
    count = ends[-1]
    cut = [Run(0, range(a, b)) for a, b in pairwise(ends)]
    planned = [run for share in shares(cut, None, partitions, 3) for run in share]
    sent = [_run(run.partition, run.positions, picked[n]) for n, run in enumerate(planned)]
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
