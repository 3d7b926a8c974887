"""The producer's batching decisions: which sends share a batch, and the bytes they make."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from pafka.client import produce_batching
from pafka.client.produce_batching import MERGE_LIMIT_BYTES, MERGE_MAX_RECORDS, build, plan
from pafka.errors import InvalidRecordError, MessageTooLargeError, NotLeaderOrFollowerError
from pafka.records.batch import iter_batches
from pafka.records.encoding import build_batch

Pair = tuple[bytes | None, bytes | None]


@dataclass
class Send:
    pairs: list[Pair] | None
    batch: bytes | None
    timestamp_ms: int
    alone: bool = False


def _plain(pairs: list[Pair], timestamp_ms: int, alone: bool = False) -> Send:
    return Send(pairs, None, timestamp_ms, alone)


def _own(pairs: list[Pair], timestamp_ms: int) -> Send:
    return Send(None, build_batch([(k, v, ()) for k, v in pairs], timestamp_ms=timestamp_ms), 0)


data = st.none() | st.binary(max_size=40)
pairs = st.lists(st.tuples(data, data), min_size=1, max_size=40)
sends = st.lists(
    st.builds(_plain, pairs, st.integers(1_700_000_000_000, 1_700_000_100_000), st.booleans())
    | st.builds(_own, pairs, st.integers(0, 2**40)),
    min_size=1,
    max_size=30,
)


@given(sends)
def test_the_plan_keeps_every_send_once_in_order(found: list[Send]) -> None:
    groups = plan(found)
    assert [s for g in groups for s in g] == found
    for group in groups:
        if len(group) > 1:
            assert all(s.pairs is not None and not s.alone for s in group)
            assert all(len(s.pairs or ()) <= MERGE_MAX_RECORDS for s in group)
            weight = sum(
                len(k or b"") + len(v or b"") + produce_batching.RECORD_OVERHEAD_BYTES
                for s in group
                for k, v in s.pairs or ()
            )
            assert weight <= MERGE_LIMIT_BYTES


@given(sends)
def test_a_merged_batch_is_the_batch_of_every_record_at_its_own_sends_time(
    found: list[Send],
) -> None:
    for group in plan(found):
        if group[0].pairs is None:
            assert build(group) == group[0].batch
            continue
        records = [(k, v, ()) for s in group for k, v in s.pairs or ()]
        stamps = [s.timestamp_ms for s in group for _ in s.pairs or ()]
        assert build(group) == build_batch(records, timestamps_ms=stamps)


def test_small_sends_share_a_batch_until_the_limit() -> None:
    value = b"v" * 1000
    group_sends = [_plain([(None, value)], 1_700_000_000_000 + i) for i in range(40)]
    groups = plan(group_sends)
    per_batch = MERGE_LIMIT_BYTES // (1000 + produce_batching.RECORD_OVERHEAD_BYTES)
    assert [len(g) for g in groups] == [per_batch, per_batch, 40 - 2 * per_batch]
    joined = b"".join(build(g) for g in groups)
    assert [h.records_count for _, h in iter_batches(joined)] == [len(g) for g in groups]


def test_large_alone_and_non_plain_sends_make_batches_of_their_own() -> None:
    small = _plain([(b"k", b"v")], 1)
    large = _plain([(b"k", b"v")] * (MERGE_MAX_RECORDS + 1), 1)
    alone = _plain([(b"k", b"v")], 1, alone=True)
    own = _own([(b"k", b"v")], 1)
    assert plan([small, small, large, small, alone, small, own, small]) == [
        [small, small],
        [large],
        [small],
        [alone],
        [small],
        [own],
        [small],
    ]


def test_only_refusals_of_a_whole_record_set_split_it() -> None:
    assert isinstance(InvalidRecordError(), produce_batching.REFUSED_WHOLE)
    assert isinstance(MessageTooLargeError(), produce_batching.REFUSED_WHOLE)
    assert not isinstance(NotLeaderOrFollowerError(), produce_batching.REFUSED_WHOLE)
