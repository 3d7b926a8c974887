"""Process failures on a cluster of its own: controllers and brokers killed, paused, restarted.

Replication between brokers is not built yet, so durability across a broker crash is checked on
a replication-factor-1 partition that comes back with its broker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pafka.admin import topics as admin
from pafka.local.cluster import ServiceProcess
from pafka.storage import layout
from pafka.zk.znodes import BrokerInfo, ControllerEpochZNode, ControllerZNode, PartitionState
from tests.integration.conftest import ClusterHandle
from tests.integration.conftest import own_cluster as started_cluster


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with started_cluster(tmp_path_factory, "failover", brokers=3, controllers=2) as handle:
        yield handle


def _status(service: ServiceProcess) -> dict[str, Any]:
    with urllib.request.urlopen(service.http_url + "/status", timeout=2) as response:
        loaded: dict[str, Any] = json.load(response)
        return loaded


def _active_controller(cluster: ClusterHandle) -> tuple[int, int]:
    data, _ = cluster.zk.get(ControllerZNode.path())
    epoch, _ = cluster.zk.get(ControllerEpochZNode.path())
    return ControllerZNode.decode(data).controller_id, ControllerEpochZNode.decode(epoch)


def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _produce(cluster: ClusterHandle, topic: str, values: list[bytes]) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=5)
    futures = [producer.send(topic, value=v) for v in values]
    acked = [(f.get(30).partition, f.get(30).offset) for f in futures]
    producer.close()
    return acked


def _consume_all(cluster: ClusterHandle, topic: str, partitions: int) -> list[bytes]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    end = consumer.end_offsets(tps)
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while any(consumer.position(tp) < end[tp] for tp in tps) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            values.extend(r.value for r in records)
    consumer.close()
    return values


def test_killed_controller_is_replaced_with_a_higher_epoch(own_cluster: ClusterHandle) -> None:
    active, epoch = _active_controller(own_cluster)
    own_cluster.local.kill(f"controller-{active}", signal.SIGKILL)
    _wait(lambda: _active_controller(own_cluster)[0] != active, 20, "a new active controller")
    new_active, new_epoch = _active_controller(own_cluster)
    assert new_active != active
    assert new_epoch == epoch + 1
    topic = f"after-failover-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(topic, partitions=3, replication_factor=2)
    states = [own_cluster.partition_state(topic, p) for p in range(3)]
    assert all(s.leader >= 0 and s.controller_epoch == new_epoch for s in states)
    own_cluster.local.restart(f"controller-{active}")
    assert _status(own_cluster.local.services[f"controller-{active}"])["active"] is False


def test_paused_controller_cannot_change_anything(own_cluster: ClusterHandle) -> None:
    active, epoch = _active_controller(own_cluster)
    name = f"controller-{active}"
    own_cluster.local.kill(name, signal.SIGSTOP)
    try:
        _wait(lambda: _active_controller(own_cluster)[0] != active, 30, "a new active controller")
        _, new_epoch = _active_controller(own_cluster)
        assert new_epoch == epoch + 1
    finally:
        own_cluster.local.send_signal(own_cluster.local.services[name], signal.SIGCONT)
    # The woken controller must notice it was deposed and must not have written anything.
    _wait(lambda: _status(own_cluster.local.services[name])["active"] is False, 20, "resignation")
    topic = f"after-pause-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(topic, partitions=2, replication_factor=1)
    for p in range(2):
        assert own_cluster.partition_state(topic, p).controller_epoch == new_epoch
    assert _active_controller(own_cluster)[1] == new_epoch
    for broker in own_cluster.local.brokers():
        assert _status(broker)["controller_epoch"] == new_epoch


def test_acknowledged_records_survive_kill_9_and_a_torn_tail(own_cluster: ClusterHandle) -> None:
    topic = f"durable-{uuid.uuid4().hex[:6]}"
    admin.create_topic(own_cluster.zk, topic, 1, 1, {}, assignment={0: (2,)})
    own_cluster.wait_for_leaders(topic, 1)
    values = [f"record-{i}".encode() for i in range(500)]
    acked = _produce(own_cluster, topic, values)
    assert [o for _, o in acked] == list(range(500))

    own_cluster.local.kill("broker-2", signal.SIGKILL)
    segment_dir = Path(own_cluster.local.broker(2).data_dir) / f"{topic}-0"
    active = max(segment_dir.glob("*" + layout.LOG_SUFFIX))
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x01\xf4\x00\x00\x01\x00torn write")
    own_cluster.local.restart("broker-2")
    own_cluster.wait_for_leaders(topic, 1)

    assert _consume_all(own_cluster, topic, 1) == values
    more = _produce(own_cluster, topic, [b"after-restart"])
    assert more == [(0, 500)]


def test_second_broker_with_a_taken_id_fails_fast(own_cluster: ClusterHandle) -> None:
    env = {
        **own_cluster.local.broker(1).env,
        "PAFKA_BROKER_PORT": "0",
        "PAFKA_BROKER_HTTP_PORT": "0",
        "PAFKA_BROKER_DATA_DIR": str(Path(own_cluster.local.data_dir) / "intruder"),
    }
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "broker"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "already registered" in result.stderr
    assert time.monotonic() - started < 20
    data, _ = own_cluster.zk.get(BrokerInfo.path(1))
    assert BrokerInfo.decode(1, data).port == own_cluster.local.broker(1).port


def test_state_znodes_look_as_designed(own_cluster: ClusterHandle) -> None:
    topic = f"demo-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(topic, partitions=6, replication_factor=3)
    zk: KazooClient = own_cluster.zk
    topic_json = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
    assert topic_json["version"] == 3 and uuid.UUID(topic_json["topic_id"])
    assert sorted(topic_json["partitions"]) == [str(p) for p in range(6)]
    leaders = []
    for p in range(6):
        state = json.loads(zk.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
        assert set(state) == {"version", "leader", "leader_epoch", "isr", "controller_epoch"}
        assert state["isr"] == topic_json["partitions"][str(p)]
        leaders.append(state["leader"])
        assert (
            PartitionState.decode(topic, p, zk.get(PartitionState.path(topic, p))[0]).leader
            == state["leader"]
        )
    assert sorted(leaders.count(b) for b in own_cluster.broker_ids()) == [2, 2, 2]


def test_preferred_replica_election_moves_leadership_back(own_cluster: ClusterHandle) -> None:
    topic = f"preferred-{uuid.uuid4().hex[:6]}"
    admin.create_topic(own_cluster.zk, topic, 1, 2, {}, assignment={0: (1, 3)})
    own_cluster.wait_for_leaders(topic, 1)
    # As after an earlier failover: broker 3 leads while the preferred broker 1 is in sync.
    path = PartitionState.path(topic, 0)
    data, stat = own_cluster.zk.get(path)
    state = PartitionState.decode(topic, 0, data)
    moved = PartitionState(3, state.leader_epoch + 1, (3, 1), state.controller_epoch)
    own_cluster.zk.set(path, moved.encode(), version=stat.version)

    admin.request_preferred_election(own_cluster.zk, [(topic, 0)])
    _wait(lambda: own_cluster.partition_state(topic, 0).leader == 1, 20, "preferred leader")
    final = own_cluster.partition_state(topic, 0)
    assert final.leader_epoch == moved.leader_epoch + 1
    _wait(
        lambda: own_cluster.zk.exists("/admin/preferred_replica_election") is None,
        10,
        "request cleared",
    )
    _wait(
        lambda: _status(own_cluster.local.broker(1))["partitions"][f"{topic}-0"]["leader"] == 1,
        10,
        "broker 1 leads",
    )


def test_acked_writes_survive_leader_kill_with_replication(own_cluster: ClusterHandle) -> None:
    """RF 3, min ISR 2, acks=all with idempotence: kill -9 a leader mid-stream, restart it;
    every acknowledged record is read back exactly once, in order per partition."""
    import threading

    from confluent_kafka import Producer

    topic = f"replicated-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(
        topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    victim = own_cluster.partition_state(topic, 0).leader
    producer = Producer(
        {
            "bootstrap.servers": own_cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 60_000,
        }
    )
    acked: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    failed: list[str] = []
    lock = threading.Lock()

    def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
        with lock:
            if err is None:
                acked[msg.partition()].append(msg.value())
            else:
                failed.append(str(err))

    for i in range(3000):
        producer.produce(topic, value=f"r{i:05d}".encode(), partition=i % 3, on_delivery=delivered)
        producer.poll(0)
        if i == 1000:
            producer.flush(30)
            own_cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
    assert producer.flush(90) == 0
    own_cluster.local.restart(f"broker-{victim}")

    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=own_cluster.bootstrap, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(3)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    deadline = time.monotonic() + 60
    while (
        sum(map(len, got.values())) < sum(map(len, acked.values())) and time.monotonic() < deadline
    ):
        for tp, records in consumer.poll(timeout_ms=1000).items():
            got[tp.partition].extend(r.value for r in records)
    consumer.close()
    assert not failed
    for p in range(3):
        assert got[p] == acked[p], f"partition {p}: acknowledged records differ from the log"


def test_sigterm_moves_leadership_away_before_exit(own_cluster: ClusterHandle) -> None:
    topic = f"controlled-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(
        topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    victim = own_cluster.partition_state(topic, 0).leader
    name = f"broker-{victim}"
    own_cluster.local.kill(name, signal.SIGTERM)
    # The victim may still lead single-replica partitions of other tests; this topic's
    # partitions all have other in-sync replicas, so all of them must have moved.
    for p in range(3):
        state = own_cluster.partition_state(topic, p)
        assert state.leader not in (victim, -1)
        assert victim not in state.isr
    own_cluster.local.restart(name)
    _wait(
        lambda: victim in own_cluster.partition_state(topic, 0).isr,
        30,
        "the broker to rejoin the ISR",
    )


def test_partition_reassignment_moves_replicas_and_data(own_cluster: ClusterHandle) -> None:
    topic = f"reassign-{uuid.uuid4().hex[:6]}"
    admin.create_topic(own_cluster.zk, topic, 1, 2, {}, assignment={0: (1, 2)})
    own_cluster.wait_for_leaders(topic, 1)
    values = [f"m{i}".encode() for i in range(300)]
    _produce(own_cluster, topic, values)

    admin.reassign_partitions(own_cluster.zk, {(topic, 0): (3, 2)})
    _wait(lambda: own_cluster.zk.exists("/admin/reassign_partitions") is None, 60, "completion")
    data, _ = own_cluster.zk.get(f"/brokers/topics/{topic}")
    assert json.loads(data)["partitions"]["0"] == [3, 2]
    state = own_cluster.partition_state(topic, 0)
    assert set(state.isr) == {2, 3} and state.leader in (2, 3)
    _wait(
        lambda: not (Path(own_cluster.local.broker(1).data_dir) / f"{topic}-0").exists(),
        20,
        "the old replica's data to be deleted",
    )
    assert _consume_all(own_cluster, topic, 1) == values


def test_broker_bounce_hidden_from_the_children_watch_is_handled(
    own_cluster: ClusterHandle,
) -> None:
    """A broker killed and back under a new session before the controller re-reads
    ``/brokers/ids`` leaves the id list unchanged; its registration's czxid tells the bounce.
    The registration is replaced in one transaction, so the watch can only see the same list."""
    topic = f"bounce-{uuid.uuid4().hex[:6]}"
    own_cluster.create_topic(
        topic, partitions=3, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    victim = own_cluster.partition_state(topic, 0).leader
    path = BrokerInfo.path(victim)
    registration, _ = own_cluster.zk.get(path)
    own_cluster.local.kill(f"broker-{victim}", signal.SIGKILL)
    swap = own_cluster.zk.transaction()
    swap.delete(path)
    swap.create(path, registration, ephemeral=True)
    assert all(result is True or result == path for result in swap.commit())
    try:
        _wait(
            lambda: own_cluster.partition_state(topic, 0).leader not in (victim, -1),
            30,
            "leadership to move off the bounced broker",
        )
        assert victim not in own_cluster.partition_state(topic, 0).isr
    finally:
        own_cluster.zk.delete(path)
        own_cluster.local.restart(f"broker-{victim}")
    _wait(
        lambda: victim in own_cluster.partition_state(topic, 0).isr,
        30,
        "the restarted broker to rejoin the ISR",
    )
