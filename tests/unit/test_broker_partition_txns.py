"""A partition's transactions on a real log: the stable offset, the txn index, and both kept
across a clean restart (snapshots), an unclean one and a truncation."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import PartitionInfo
from pafka.errors import (
    InvalidProducerEpochError,
    NotEnoughReplicasError,
    TransactionalIdAuthorizationFailedError,
)
from pafka.records.encoding import build_batch
from pafka.storage import layout, txn_index
from pafka.storage.config import LogConfig
from pafka.storage.log_manager import LogManager
from services.broker.handlers.txn_markers import write_marker
from services.broker.partition import Partition

ME = 1
A, B = 5, 6


def txn(pid: int, seq: int, n: int = 1) -> bytes:
    return build_batch(
        [(None, b"v", [])] * n,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
        timestamp_ms=1000,
    )


def leader(data_dir: Path) -> Partition:
    config = TopicConfig()
    log_ = LogManager(data_dir, LogConfig()).get_or_create("t", 0, config.log_config())
    partition = Partition("t", 0, log_, config)
    partition.apply(PartitionInfo("t", uuid.uuid4(), 0, ME, 0, (ME,), (ME,), 0, 1), ME)
    return partition


def written(data_dir: Path) -> Partition:
    """A: offsets 0-1 then aborted at 4; B: open from 3; a plain batch at 2; a roll at 3."""
    p = leader(data_dir)
    p.append_as_leader(txn(A, 0, 2), -1, "a")
    p.append_as_leader(build_batch([(None, b"plain", [])], timestamp_ms=1000), -1)
    p.log.roll()
    p.append_as_leader(txn(B, 0), -1, "b")
    assert write_marker(p, A, 0, commit=False, coordinator_epoch=0) == 4
    return p


def check_state(p: Partition) -> None:
    assert p.log.log_end_offset == 5
    assert p.txns.last_stable_offset() == 3
    assert p.txns.state.ongoing == {B: 3}
    assert p.txns.aborted_between(0, 5) == ((A, 0),)
    with pytest.raises(InvalidProducerEpochError):
        p.txns.check_marker(A, -1, 0)


def test_stable_offset_and_aborted_index_on_a_leader(tmp_path: Path) -> None:
    p = written(tmp_path)
    check_state(p)
    index = layout.txn_index_file(p.log.directory, 3)
    assert txn_index.read(index) == [txn_index.AbortedTxn(A, 0, 4, 3)]
    assert p.read(0, 1 << 20, up_to_high_watermark=True, read_committed=True).records
    assert p.txns.aborted_between(3, 5) == ((A, 0),)
    assert p.txns.aborted_between(5, 5) == ()
    # A read returns from one segment: the search for aborted transactions ends with it.
    assert [p.log.read_upper_bound(o) for o in (0, 2, 3, 4)] == [3, 3, 5, 5]


def test_transactional_batches_need_a_transactional_id(tmp_path: Path) -> None:
    p = leader(tmp_path)
    with pytest.raises(TransactionalIdAuthorizationFailedError):
        p.append_as_leader(txn(A, 0), -1)
    assert p.log.log_end_offset == 0


def test_a_clean_restart_loads_the_snapshot(tmp_path: Path) -> None:
    p = written(tmp_path)
    p.log.close()
    assert layout.snapshot_offsets(p.log.directory) == [3, 5]
    check_state(leader(tmp_path))


def test_an_unclean_restart_replays_from_the_roll_snapshot_and_reindexes(tmp_path: Path) -> None:
    p = written(tmp_path)
    p.log.flush()
    p.log.close_uncleanly()
    index = layout.txn_index_file(p.log.directory, 3)
    index.unlink()  # the entry was lost in the crash
    again = leader(tmp_path)
    check_state(again)
    assert txn_index.read(index) == [txn_index.AbortedTxn(A, 0, 4, 3)]


def test_a_truncation_reopens_the_transaction_its_marker_ended(tmp_path: Path) -> None:
    p = written(tmp_path)
    p.truncate_to(4)
    assert p.txns.state.ongoing == {A: 0, B: 3}
    assert p.txns.last_stable_offset() == 0
    assert p.txns.aborted_between(0, 4) == ()


def test_a_follower_replicating_the_log_holds_the_same_transactions(tmp_path: Path) -> None:
    source = written(tmp_path / "leader")
    config = TopicConfig()
    log_ = LogManager(tmp_path / "follower", LogConfig()).get_or_create("t", 0, config.log_config())
    follower = Partition("t", 0, log_, config)
    follower.apply(PartitionInfo("t", uuid.uuid4(), 0, 2, 0, (2, ME), (2, ME), 0, 1), ME)
    offset = 0
    while offset < source.log.log_end_offset:
        data = bytes(source.log.read(offset, 1 << 20))
        follower.append_as_follower(data, source.log.high_watermark)
        offset = follower.log.log_end_offset
    follower.log.high_watermark = source.log.high_watermark
    assert follower.txns.state.ongoing == source.txns.state.ongoing == {B: 3}
    assert follower.txns.aborted_between(0, 5) == ((A, 0),)
    assert follower.txns.last_stable_offset() == 3


def test_markers_wait_for_min_insync_replicas(tmp_path: Path) -> None:
    p = leader(tmp_path)
    p.config = TopicConfig(min_insync_replicas=2)
    with pytest.raises(NotEnoughReplicasError):
        write_marker(p, A, 0, commit=True, coordinator_epoch=0)
    assert p.log.log_end_offset == 0
