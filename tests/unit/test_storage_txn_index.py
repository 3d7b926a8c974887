"""The transaction index: Kafka's entry layout, truncation, and collectAbortedTxns."""

from __future__ import annotations

import struct
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pafka.storage import layout, txn_index
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.txn_index import AbortedTxn


def test_golden_entry() -> None:
    entry = AbortedTxn(producer_id=7, first_offset=10, last_offset=20, last_stable_offset=21)
    assert txn_index.encode(entry) == struct.pack(">hqqqq", 0, 7, 10, 20, 21)
    assert txn_index.ENTRY_SIZE == 34


entries = st.lists(
    st.builds(
        AbortedTxn,
        st.integers(0, 2**62),
        st.integers(0, 2**40),
        st.integers(0, 2**40),
        st.integers(0, 2**40),
    ),
    max_size=8,
)


@given(entries)
def test_round_trip_ignores_a_torn_tail(found: list[AbortedTxn]) -> None:
    data = b"".join(txn_index.encode(e) for e in found)
    assert txn_index.decode(data) == found
    assert txn_index.decode(data + b"\x00" * 7) == found


def test_append_read_truncate(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    assert txn_index.read(path) == []
    for last in (5, 9, 14):
        txn_index.append(path, AbortedTxn(1, last - 3, last, last + 1))
    assert [e.last_offset for e in txn_index.read(path)] == [5, 9, 14]
    txn_index.truncate(path, 10)
    assert [e.last_offset for e in txn_index.read(path)] == [5, 9]
    txn_index.truncate(path, 9)
    assert [e.last_offset for e in txn_index.read(path)] == [5]
    txn_index.truncate(path, 0)
    assert not path.exists()
    txn_index.truncate(path, 0)  # nothing to do


def test_collect_overlapping_and_complete() -> None:
    index = [
        AbortedTxn(1, 0, 4, 5),
        AbortedTxn(2, 6, 10, 11),
        AbortedTxn(3, 12, 20, 25),
    ]
    found, complete = txn_index.collect(index, 5, 12)
    assert found == [index[1]] and complete
    found, complete = txn_index.collect(index, 0, 100)
    assert found == index and not complete


def test_collect_across_segments_stops_when_complete(tmp_path: Path) -> None:
    first, second, third = (tmp_path / f"{i}.txnindex" for i in range(3))
    txn_index.append(first, AbortedTxn(1, 0, 4, 5))
    txn_index.append(second, AbortedTxn(2, 3, 12, 13))
    txn_index.append(third, AbortedTxn(3, 14, 16, 17))
    assert txn_index.collect_aborted([first, second, third], 4, 13) == [
        AbortedTxn(1, 0, 4, 5),
        AbortedTxn(2, 3, 12, 13),
    ]


def test_a_merged_segments_orphaned_index_is_adopted_on_open(tmp_path: Path) -> None:
    """Recovery completed a clean's swap of segments 0 and 3 into one at 0: the index of 3
    has no log any more, and its entries belong to the segment at 0."""
    directory = tmp_path / "t-0"
    Log.open(directory, LogConfig()).close()
    first = AbortedTxn(1, 0, 1, 2)
    orphan = AbortedTxn(2, 3, 4, 5)
    txn_index.append(layout.txn_index_file(directory, 0), first)
    txn_index.append(layout.txn_index_file(directory, 3), orphan)
    Log.open(directory, LogConfig()).close()
    assert txn_index.read(layout.txn_index_file(directory, 0)) == [first, orphan]
    assert not layout.txn_index_file(directory, 3).exists()
