"""Transactional offsets, the pure decisions: TxnOffsetCommit v3's member checks (KIP-447, as
Kafka 2.8's ``doTxnCommitOffsets``), fenced producer epochs, and what a commit marker writes
(a plain commit written after the transactional one wins, as in Kafka's log order)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import (
    CorruptZNodeError,
    FencedInstanceIdError,
    IllegalGenerationError,
    UnknownMemberIdError,
)
from pafka.groups.membership import GroupMetadata, Member
from pafka.groups.txn_offsets import (
    PendingOffset,
    offsets_to_commit,
    stale_epoch,
    txn_commit_error,
)
from pafka.zk.znodes import CommittedOffsetZNode, PendingTxnOffsetZNode
from pafka.zk.znodes import TxnOffsetProducerZNodes as P


def _group(*members: tuple[str, str | None], generation: int = 4) -> GroupMetadata:
    meta = GroupMetadata(group_id="g", generation=generation)
    for member_id, instance_id in members:
        meta.members[member_id] = Member(member_id, "c", "h", 10_000, 10_000, instance_id)
    return meta


def test_below_v3_and_empty_groups_accept_anyone() -> None:
    assert txn_commit_error(_group(), "", None, -1) is None
    assert txn_commit_error(_group(("m1", None)), "", None, -1) is None


def test_member_and_generation_are_checked_when_given() -> None:
    meta = _group(("m1", None))
    assert txn_commit_error(meta, "m1", None, 4) is None
    assert txn_commit_error(meta, "m1", None, -1) is None
    assert isinstance(txn_commit_error(meta, "m2", None, 4), UnknownMemberIdError)
    assert isinstance(txn_commit_error(meta, "m1", None, 3), IllegalGenerationError)
    # The empty member id skips the member check, not the generation's.
    assert isinstance(txn_commit_error(meta, "", None, 5), IllegalGenerationError)
    assert isinstance(txn_commit_error(_group(), "", None, 1), IllegalGenerationError)


def test_static_member_fenced_first() -> None:
    meta = _group(("m1", "i1"))
    assert txn_commit_error(meta, "m1", "i1", 4) is None
    # Fencing outranks the other checks, as in Kafka.
    assert isinstance(txn_commit_error(meta, "old", "i1", 3), FencedInstanceIdError)
    # An instance id nobody holds is no reason to fence.
    assert txn_commit_error(meta, "m1", "i9", 4) is None


def _pending(offset: int, epoch: int = 0) -> PendingTxnOffsetZNode:
    return PendingTxnOffsetZNode(offset, epoch, 3, "meta", 1000)


def test_stale_epoch() -> None:
    assert not stale_epoch([], 0)
    assert not stale_epoch([_pending(1, 2), _pending(2, 3)], 3)
    assert not stale_epoch([_pending(1, 2)], 5)
    assert stale_epoch([_pending(1, 2), _pending(2, 3)], 2)


def test_commit_marker_keeps_newer_plain_commits() -> None:
    pending = {
        ("t", 0): PendingOffset(_pending(10), zxid=50),
        ("t", 1): PendingOffset(_pending(11), zxid=50),
        ("t", 2): PendingOffset(_pending(12), zxid=50),
    }
    # t-0 committed before the transaction's commit, t-1 after it, t-2 never.
    found = offsets_to_commit(pending, {("t", 0): 40, ("t", 1): 60})
    assert found == {
        ("t", 0): CommittedOffsetZNode(10, 3, "meta", 1000),
        ("t", 2): CommittedOffsetZNode(12, 3, "meta", 1000),
    }


@given(
    st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), st.integers(0, 100)),
    st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 3)), st.integers(0, 100)),
)
def test_a_pending_offset_applies_exactly_when_newer(
    pending_zxids: dict[tuple[str, int], int], committed: dict[tuple[str, int], int]
) -> None:
    pending = {tp: PendingOffset(_pending(zxid), zxid) for tp, zxid in pending_zxids.items()}
    found = offsets_to_commit(pending, committed)
    assert set(found) <= set(pending)
    for tp, zxid in pending_zxids.items():
        assert (tp in found) == (committed.get(tp, -1) < zxid)


def test_pending_znode_round_trip() -> None:
    node = PendingTxnOffsetZNode(42, 7, 3, "m\N{EM DASH}", 1234)
    assert PendingTxnOffsetZNode.decode("/p", node.encode()) == node
    assert node.committed() == CommittedOffsetZNode(42, 3, "m\N{EM DASH}", 1234)


def test_malformed_pending_nodes_name_themselves() -> None:
    for data in (b"", b"12", b'{"offset": 1}', b'{"offset": 1, "producer_epoch": 99999}'):
        with pytest.raises(CorruptZNodeError, match="/p"):
            PendingTxnOffsetZNode.decode("/p", data)
    assert P.decode("/i", P.encode(17)) == 17
    with pytest.raises(CorruptZNodeError, match="/i"):
        P.decode("/i", b'{"version": 1}')
