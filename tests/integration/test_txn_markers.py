"""WriteTxnMarkers on partition leaders: markers appended and replicated, Kafka's refusals."""

from __future__ import annotations

import socket
import uuid

from tests.integration.txn_wire import init_producer_id, produce, txn_batch, write_marker

INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3


def test_markers_end_transactions_and_fence_old_epochs(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    leader = cluster.leader_address(topic, 0)
    pid = init_producer_id(leader)
    with socket.create_connection(leader, timeout=15) as sock:
        first = produce(sock, topic, txn_batch([b"a", b"b"], pid, 0, 0))
        assert (first.error_code, first.base_offset) == (0, 0)
        # Inside an open transaction the producer may not write outside it.
        plain = produce(sock, topic, txn_batch([b"c"], pid, 0, 2, transactional=False), 2)
        assert plain.error_code == INVALID_TXN_STATE
    assert write_marker(leader, topic, pid, 0, commit=True, coordinator_epoch=3) == [0]
    with socket.create_connection(leader, timeout=15) as sock:
        # The marker took offset 2: the next batch follows it.
        after = produce(sock, topic, txn_batch([b"d"], pid, 0, 2), 3)
        assert (after.error_code, after.base_offset) == (0, 3)
    # An older coordinator epoch is fenced; the coordinator's epoch bump then fences epoch 0.
    fenced = write_marker(leader, topic, pid, 0, commit=False, coordinator_epoch=2)
    assert fenced == [TRANSACTION_COORDINATOR_FENCED]
    # (Kafka 2.8's v0, the classic encoding, as the flexible v1.)
    assert write_marker(leader, topic, pid, 1, commit=False, coordinator_epoch=3, version=0) == [0]
    assert write_marker(leader, topic, pid, 0, commit=False, coordinator_epoch=3) == [
        INVALID_PRODUCER_EPOCH
    ]
    with socket.create_connection(leader, timeout=15) as sock:
        stale = produce(sock, topic, txn_batch([b"e"], pid, 0, 3), 4)
        assert stale.error_code == INVALID_PRODUCER_EPOCH
        anonymous = produce(sock, topic, txn_batch([b"f"], pid, 1, 0), 5, transactional_id=None)
        assert anonymous.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_markers_refused_where_the_partition_is_not_led(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    state = cluster.partition_state(topic, 0)
    follower = next(b for b in cluster.broker_ids() if b != state.leader)
    address = cluster.broker_address(follower)
    assert write_marker(address, topic, 1, 0, commit=True) == [NOT_LEADER_OR_FOLLOWER]
    assert write_marker(address, f"missing-{topic}", 1, 0, commit=True) == [
        UNKNOWN_TOPIC_OR_PARTITION
    ]
    # The group coordinator's offsets partitions have no log: completed there, and producer 1
    # has no offsets pending in any group (test_groups_txn_offsets.py).
    assert write_marker(address, "__consumer_offsets", 1, 0, commit=True) == [0]
