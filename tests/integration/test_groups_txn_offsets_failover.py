"""Pending transactional offsets survive their group coordinator: offsets committed in a
transaction, then the coordinator's broker killed with SIGKILL; the broker that takes the
group over still holds them pending (UNSTABLE_OFFSET_COMMIT to a stable fetch, invisible to
another) and commits them on the transaction's marker.

On the group-coordinator suite's own cluster (a ZooKeeper chroot, fresh ports), whose
fixture this module shares; the test leaves every broker running.
"""

from __future__ import annotations

import signal
import uuid

from pafka.zk.znodes import ConsumerGroupZNodes as Z
from tests.integration.conftest import ClusterHandle
from tests.integration.test_groups_bad_input import GroupConn
from tests.integration.test_groups_coordinator import (  # noqa: F401 (a fixture)
    FAILOVER_BOUND_S,
    claim,
    cluster,
    find_coordinator,
    registered,
    restart_if_down,
    wait_for,
)
from tests.integration.txn_offsets_wire import (
    NO_OFFSET,
    NONE,
    UNSTABLE_OFFSET_COMMIT,
    fetch,
    indexed,
    marker,
    new_producer_id,
    pending_in_zookeeper,
    txn_commit,
)


def test_pending_offsets_survive_a_kill_9_of_the_coordinator(cluster: ClusterHandle) -> None:  # noqa: F811
    topic, group = f"txnfo-{uuid.uuid4().hex[:8]}", f"txnfo-g-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    brokers = cluster.broker_ids()
    victim = find_coordinator(cluster.broker_address(brokers[0]), group)
    pid = new_producer_id()
    conn = GroupConn(cluster.broker_address(victim), group)
    try:
        assert conn.commit(-1, "", {(topic, 0): 2}) == {(topic, 0): NONE}
        assert txn_commit(conn, pid, {(topic, 0): 12, (topic, 1): 13}) == {
            (topic, 0): NONE,
            (topic, 1): NONE,
        }
    finally:
        conn.close()
    before = claim(cluster, group)
    assert before.broker_id == victim
    survivor = next(b for b in brokers if b != victim)
    try:
        cluster.local.kill(f"broker-{victim}", signal.SIGKILL)

        def successor() -> int | None:
            if registered(cluster, victim):
                return None
            found = find_coordinator(cluster.broker_address(survivor), group)
            return found if found != victim else None

        heir = wait_for("another broker named coordinator", successor, FAILOVER_BOUND_S)
        conn = GroupConn(cluster.broker_address(heir), group)
        try:
            parts = [(topic, 0), (topic, 1)]
            assert fetch(conn, parts, require_stable=True) == {
                (topic, 0): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT),
                (topic, 1): (NO_OFFSET, UNSTABLE_OFFSET_COMMIT),
            }
            assert fetch(conn, parts, require_stable=False) == {
                (topic, 0): (2, NONE),
                (topic, 1): (NO_OFFSET, NONE),
            }
            assert claim(cluster, group).broker_id == heir
            assert marker(conn, pid, committed=True) == NONE
            assert fetch(conn, parts, require_stable=True) == {
                (topic, 0): (12, NONE),
                (topic, 1): (13, NONE),
            }
            assert pending_in_zookeeper(cluster.zk, group, pid) == set()
            assert not indexed(cluster.zk, pid, group)
            assert cluster.zk.get(Z.offset_path(group, topic, 1))[0] == b"13"
        finally:
            conn.close()
    finally:
        restart_if_down(cluster, victim)
