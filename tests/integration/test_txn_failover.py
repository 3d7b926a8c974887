"""Open and aborted transactions survive a leader change, a clean restart and a kill -9, on a
cluster of its own (brokers are restarted)."""

from __future__ import annotations

import signal
import socket
import uuid
from collections.abc import Iterator

import pytest

from pafka.admin import topics as admin
from pafka.records.encoding import build_batch
from tests.integration.compaction import wait_until
from tests.integration.conftest import ClusterHandle
from tests.integration.conftest import own_cluster as started_cluster
from tests.integration.txn_wire import (
    consume,
    init_producer_id,
    list_latest,
    produce,
    txn_batch,
    write_marker,
)


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with started_cluster(tmp_path_factory, "txn-failover", brokers=3, controllers=1) as handle:
        yield handle


def _open_and_abort(cluster: ClusterHandle, topic: str) -> tuple[int, int]:
    """A: open at 0; B: b1 at 1, aborted by the marker at 2; p at 3. (A, B)."""
    leader = cluster.leader_address(topic, 0)
    a, b = init_producer_id(leader), init_producer_id(leader)
    with socket.create_connection(leader, timeout=15) as sock:
        assert produce(sock, topic, txn_batch([b"a1"], a, 0, 0)).base_offset == 0
        assert produce(sock, topic, txn_batch([b"b1"], b, 0, 0)).base_offset == 1
        assert write_marker(leader, topic, b, 0, commit=False) == [0]
        assert produce(sock, topic, build_batch([(None, b"p", ())])).base_offset == 3
    return a, b


def _held_back(cluster: ClusterHandle, topic: str) -> bool:
    """The current leader answers read_committed's latest offset with the open transaction's
    start (False while leadership is still moving)."""
    try:
        return list_latest(cluster.leader_address(topic, 0), topic, 1) == 0
    except (OSError, AssertionError):
        return False


def _after_abort_of_a(cluster: ClusterHandle, topic: str, a: int) -> None:
    assert write_marker(cluster.leader_address(topic, 0), topic, a, 0, commit=False) == [0]
    assert consume(cluster.bootstrap, topic, committed=True) == [(3, b"p")]
    assert [v for _, v in consume(cluster.bootstrap, topic, committed=False)] == [
        b"a1",
        b"b1",
        b"p",
    ]


def test_a_new_leader_knows_the_open_transactions(own_cluster: ClusterHandle) -> None:
    topic = f"txn-lead-{uuid.uuid4().hex[:8]}"
    own_cluster.create_topic(topic, partitions=1, replication_factor=3)
    a, _ = _open_and_abort(own_cluster, topic)
    old = own_cluster.partition_state(topic, 0).leader
    # Every replica has the batches before the old leader goes (acks=all above).
    own_cluster.local.restart(f"broker-{old}")
    wait_until(lambda: own_cluster.partition_state(topic, 0).leader != old, "a new leader", 30)
    own_cluster.wait_for_leaders(topic, 1)
    wait_until(lambda: _held_back(own_cluster, topic), "the new leader's stable offset", 30)
    assert consume(own_cluster.bootstrap, topic, committed=True) == []
    _after_abort_of_a(own_cluster, topic, a)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["clean", "kill-9"])
def test_a_restarted_broker_keeps_its_transactions(
    own_cluster: ClusterHandle, how: signal.Signals
) -> None:
    topic = f"txn-restart-{uuid.uuid4().hex[:8]}"
    broker = own_cluster.broker_ids()[0]
    admin.create_topic(own_cluster.zk, topic, 1, 1, {}, assignment={0: (broker,)})
    own_cluster.wait_for_leaders(topic, 1)
    a, _ = _open_and_abort(own_cluster, topic)
    own_cluster.local.kill(f"broker-{broker}", how)
    own_cluster.local.restart(f"broker-{broker}")
    own_cluster.wait_for_leaders(topic, 1)
    wait_until(lambda: _held_back(own_cluster, topic), "the restarted leader holds back", 30)
    assert consume(own_cluster.bootstrap, topic, committed=True) == []
    _after_abort_of_a(own_cluster, topic, a)
