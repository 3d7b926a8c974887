"""Fault cases on real processes, each under the produce-consume-validate workload."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.faults.conftest import fault_cluster_with
from tests.faults.workload import PARTITIONS, Workload
from tests.integration.conftest import ClusterHandle

pytestmark = pytest.mark.faults


def _leader(cluster: ClusterHandle, topic: str, partition: int = 0) -> int:
    return cluster.partition_state(topic, partition).leader


def _wait_isr(cluster: ClusterHandle, topic: str, size: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while any(len(cluster.partition_state(topic, p).isr) < size for p in range(PARTITIONS)):
        assert time.monotonic() < deadline, f"ISR did not reach {size}"
        time.sleep(0.2)


def _kill_leaders(cluster: ClusterHandle, *, times: int) -> None:
    """Under the workload, kill -9 the leader of partition 0 ``times`` times, each brought
    back and caught up before the next; then nothing acknowledged may be missing."""
    workload = Workload(cluster)
    workload.create_topic()
    workload.start()
    try:
        for _ in range(times):
            time.sleep(2)
            victim = _leader(cluster, workload.topic)
            print(f"kill -9 leader broker {victim}")
            cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
            time.sleep(3)
            cluster.local.restart(f"broker-{victim}")
            _wait_isr(cluster, workload.topic, 3)
    finally:
        workload.stop()
    workload.validate(f"leader kill -9 x{times}")


def test_leader_kill_9_repeatedly(fault_cluster: ClusterHandle) -> None:
    _kill_leaders(fault_cluster, times=3)


def test_follower_dies_and_returns(fault_cluster: ClusterHandle) -> None:
    workload = Workload(fault_cluster)
    workload.create_topic()
    leader = _leader(fault_cluster, workload.topic)
    follower = next(b for b in fault_cluster.partition_state(workload.topic, 0).isr if b != leader)
    workload.start()
    try:
        time.sleep(2)
        print(f"kill -9 follower broker {follower}")
        fault_cluster.local.kill(f"broker-{follower}", signal.SIGKILL)
        deadline = time.monotonic() + 30
        while follower in fault_cluster.partition_state(workload.topic, 0).isr:
            assert time.monotonic() < deadline, "the ISR did not shrink"
            time.sleep(0.2)
        time.sleep(2)
        fault_cluster.local.restart(f"broker-{follower}")
        _wait_isr(fault_cluster, workload.topic, 3)
    finally:
        workload.stop()
    workload.validate("follower down and back")


def test_two_replicas_down_refuses_then_recovers(fault_cluster: ClusterHandle) -> None:
    workload = Workload(fault_cluster)
    workload.create_topic()
    leader = _leader(fault_cluster, workload.topic)
    others = [b for b in fault_cluster.broker_ids() if b != leader]
    workload.start()
    try:
        time.sleep(2)
        for b in others:
            print(f"kill -9 broker {b}")
            fault_cluster.local.kill(f"broker-{b}", signal.SIGKILL)
        time.sleep(12)
        acked_while_down = sum(map(len, workload.acked.values()))
        time.sleep(3)
        assert sum(map(len, workload.acked.values())) == acked_while_down, (
            "acks=all writes were acknowledged with one replica alive"
        )
        fault_cluster.local.restart(f"broker-{others[0]}")
        deadline = time.monotonic() + 60
        while sum(map(len, workload.acked.values())) == acked_while_down:
            assert time.monotonic() < deadline, "writes did not resume when a replica returned"
            time.sleep(0.5)
        fault_cluster.local.restart(f"broker-{others[1]}")
        _wait_isr(fault_cluster, workload.topic, 3)
    finally:
        workload.stop()
    workload.validate("two of three replicas down")


def test_paused_leader_cannot_acknowledge_as_a_zombie(fault_cluster: ClusterHandle) -> None:
    workload = Workload(fault_cluster)
    workload.create_topic()
    workload.start()
    try:
        time.sleep(2)
        victim = _leader(fault_cluster, workload.topic)
        name = f"broker-{victim}"
        print(f"SIGSTOP leader broker {victim} past its session timeout")
        fault_cluster.local.kill(name, signal.SIGSTOP)
        time.sleep(10)
        fault_cluster.local.send_signal(fault_cluster.local.services[name], signal.SIGCONT)
        _wait_isr(fault_cluster, workload.topic, 3)
    finally:
        workload.stop()
    workload.validate("leader paused past its session")


def test_active_controller_killed_during_elections(fault_cluster: ClusterHandle) -> None:
    from kazoo.client import KazooClient

    from pafka.zk.znodes import ControllerZNode

    workload = Workload(fault_cluster)
    workload.create_topic()
    workload.start()
    zk: KazooClient = fault_cluster.zk
    try:
        time.sleep(2)
        victim = _leader(fault_cluster, workload.topic)
        active = ControllerZNode.decode(zk.get(ControllerZNode.path())[0]).controller_id
        print(f"kill -9 leader broker {victim} and active controller {active}")
        fault_cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
        fault_cluster.local.kill(f"controller-{active}", signal.SIGKILL)
        time.sleep(10)
        fault_cluster.local.restart(f"controller-{active}")
        fault_cluster.local.restart(f"broker-{victim}")
        _wait_isr(fault_cluster, workload.topic, 3)
    finally:
        workload.stop()
    workload.validate("controller killed during elections")


def test_all_isr_members_down_stays_offline_then_recovers(fault_cluster: ClusterHandle) -> None:
    workload = Workload(fault_cluster)
    workload.create_topic()
    workload.start()
    try:
        time.sleep(2)
        print("kill -9 every broker")
        for b in fault_cluster.broker_ids():
            fault_cluster.local.kill(f"broker-{b}", signal.SIGKILL)
        time.sleep(10)
        states = [fault_cluster.partition_state(workload.topic, p) for p in range(PARTITIONS)]
        assert all(s.leader == -1 for s in states), "no unclean election may happen"
        for b in (1, 2, 3):
            fault_cluster.local.restart(f"broker-{b}")
        _wait_isr(fault_cluster, workload.topic, 3, timeout_s=90)
        time.sleep(2)
    finally:
        workload.stop()
    workload.validate("all replicas down and back")


def test_back_to_back_leader_failures(fault_cluster: ClusterHandle) -> None:
    """KIP-101/279: the leader dies, its successor dies soon after, both return; logs that
    diverged converge by leader-epoch truncation, losing nothing acknowledged."""
    workload = Workload(fault_cluster)
    workload.create_topic()
    workload.start()
    try:
        time.sleep(2)
        first = _leader(fault_cluster, workload.topic)
        print(f"kill -9 leader broker {first}")
        fault_cluster.local.kill(f"broker-{first}", signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _leader(fault_cluster, workload.topic) in (first, -1):
            assert time.monotonic() < deadline, "no new leader"
            time.sleep(0.1)
        second = _leader(fault_cluster, workload.topic)
        time.sleep(0.5)
        print(f"kill -9 the next leader broker {second}")
        fault_cluster.local.kill(f"broker-{second}", signal.SIGKILL)
        time.sleep(3)
        fault_cluster.local.restart(f"broker-{first}")
        fault_cluster.local.restart(f"broker-{second}")
        _wait_isr(fault_cluster, workload.topic, 3, timeout_s=90)
        time.sleep(2)
    finally:
        workload.stop()
    workload.validate("back-to-back leader failures")


def test_zookeeper_restart_during_the_workload(fault_cluster: ClusterHandle) -> None:
    workload = Workload(fault_cluster)
    workload.create_topic()
    workload.start()
    zk = fault_cluster.zookeeper_server  # type: ignore[attr-defined]
    try:
        time.sleep(2)
        print("restart ZooKeeper")
        zk.stop()
        time.sleep(2)
        zk.start()
        time.sleep(8)
        _wait_isr(fault_cluster, workload.topic, 3, timeout_s=60)
    finally:
        workload.stop()
    workload.validate("ZooKeeper restarted")


@pytest.mark.faults_ci
def test_leader_kill_9_on_a_cluster_secured_end_to_end(tmp_path: Path) -> None:
    """The same workload with every client and every replica fetch on SASL_SSL
    (``tests.faults.secured``): leaders killed under acks=all writes lose nothing acknowledged,
    and followers that come back authenticate to their new leaders again."""
    with fault_cluster_with(
        tmp_path, {"PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000"}, sasl_ssl=True
    ) as cluster:
        assert Workload(cluster).bootstrap != cluster.bootstrap  # the secured listener
        _kill_leaders(cluster, times=2)
