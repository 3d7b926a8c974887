"""The log cleaner and transactions: never at or past an open transaction's first offset, and
the transaction indexes of merged segments kept."""

from __future__ import annotations

from pathlib import Path

from pafka.records.batch import read_header
from pafka.records.control import build_marker, parse_marker
from pafka.records.encoding import build_batch
from pafka.storage import layout, txn_index
from pafka.storage.log import Log
from pafka.storage.txn_index import AbortedTxn
from services.broker.partition_txns import PartitionTxns
from services.broker.producer_state import ProducerStateTable
from tests.unit.compaction_util import clean, compacted_config, plan_of, read_all, write

T0 = 1_700_000_000_000
CONFIG = compacted_config()
PID = 9


def sealed(log: Log) -> None:
    log.roll(T0)
    log.high_watermark = log.log_end_offset


def write_txn(log: Log, txns: PartitionTxns, pid: int, keys: list[bytes], value: bytes) -> int:
    """One transactional batch of ``keys``, each set to ``value``; its first offset."""
    batch = build_batch(
        [(key, value, []) for key in keys],
        timestamp_ms=T0,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    first = log.append(batch, leader_epoch=0, now_ms=T0).first_offset
    txns.on_data(read_header(batch)._replace(base_offset=first), first)
    return first


def test_the_cleaner_stops_at_the_first_open_transaction(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    txns = PartitionTxns(log, ProducerStateTable())
    for value in (b"1", b"2"):
        write(log, b"k", value, T0)
    sealed(log)
    first = write_txn(log, txns, PID, [b"k"], b"txn")
    for value in (b"3", b"4"):
        write(log, b"k", value, T0)
    sealed(log)
    write(log, b"k", b"5", T0)
    sealed(log)
    assert log.last_stable_offset == first == 2
    planned = plan_of(log, T0)
    assert planned is not None
    _, _, state = planned
    assert state.first_uncleanable_offset == first
    # Once the transaction is over, everything sealed is cleanable.
    txns.state.clear()
    planned = plan_of(log, T0)
    assert planned is not None and planned[2].first_uncleanable_offset == log.active.base_offset


def test_merged_segments_keep_every_aborted_transaction(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    entries = []
    for i in range(3):
        write(log, b"k", b"%d" % i, T0)
        entry = AbortedTxn(PID, log.log_end_offset - 1, log.log_end_offset - 1, log.log_end_offset)
        log.index_aborted_txn(entry)
        entries.append(entry)
        sealed(log)
    bases = [s.base_offset for s in log.segments[:-1]]
    assert clean(log, T0 + 5) is not None
    assert [s.base_offset for s in log.segments[:-1]] == [bases[0]]
    assert txn_index.read(layout.txn_index_file(log.directory, bases[0])) == entries
    for base in bases[1:]:
        assert not layout.txn_index_file(log.directory, base).exists()


def test_an_aborted_transactions_records_go_and_its_marker_stays(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    txns = PartitionTxns(log, ProducerStateTable())
    write(log, b"a", b"committed", T0)
    for pid, commit in ((PID, False), (PID + 1, True)):
        write_txn(log, txns, pid, [b"a", b"b"], b"txn-%d" % pid)
        marker = build_marker(
            producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0, timestamp_ms=T0
        )
        offset = log.append(marker, leader_epoch=0, now_ms=T0, control=True).first_offset
        txns.on_marker(
            read_header(marker)._replace(base_offset=offset), offset, parse_marker(marker)
        )
    write(log, b"c", b"after", T0)
    sealed(log)
    assert clean(log, T0 + 5) is not None
    values = [(r.offset, r.value) for r in read_all(log)]
    # The committed transaction's "a" supersedes the plain one at 0; the aborted one's never.
    assert values == [(4, b"txn-10"), (5, b"txn-10"), (7, b"after")]
    controls = [h.base_offset for h in log.iter_headers() if h.is_control]
    assert controls == [3, 6]
    # The aborted batch was its producer's last data batch: kept empty, for its sequence.
    (emptied,) = [h for h in log.iter_headers() if h.producer_id == PID and not h.is_control]
    assert (emptied.base_offset, emptied.records_count, emptied.base_sequence) == (1, 0, 0)


def test_a_committed_transactions_records_are_compacted_like_any_others(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    txns = PartitionTxns(log, ProducerStateTable())
    write_txn(log, txns, PID, [b"a", b"b"], b"txn")
    marker = build_marker(
        producer_id=PID, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=T0
    )
    offset = log.append(marker, leader_epoch=0, now_ms=T0, control=True).first_offset
    txns.on_marker(read_header(marker)._replace(base_offset=offset), offset, parse_marker(marker))
    write(log, b"a", b"later", T0)
    write(log, b"c", b"end", T0)
    sealed(log)
    assert clean(log, T0 + 5) is not None
    values = [(r.offset, r.key, r.value) for r in read_all(log)]
    assert values == [(1, b"b", b"txn"), (3, b"a", b"later"), (4, b"c", b"end")]
    assert [h.base_offset for h in log.iter_headers() if h.is_control] == [2]
