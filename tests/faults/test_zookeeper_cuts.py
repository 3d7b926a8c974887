"""Processes cut off from ZooKeeper (a black-holed proxy in front of its client port) stop
acting in roles that need it: the active controller pauses, a leader without ZooKeeper and
followers refuses acks=all writes, a group coordinator answers COORDINATOR_NOT_AVAILABLE; and
each comes back when the cut heals."""

from __future__ import annotations

import json
import signal
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from prometheus_client.parser import text_string_to_metric_families

from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from pafka.zk.znodes import ControllerZNode
from tests.integration.conftest import TEST_BROKER_ENV, ClusterHandle
from tests.integration.tcp_proxy import TcpProxy
from tests.integration.wire import request_once
from tests.unit.records_util import build_batch

pytestmark = pytest.mark.faults

SESSION_TIMEOUT_S = 6.0  # LocalCluster's ZooKeeper session timeout for every service
LAG_MAX_MS = 3000
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_NOT_AVAILABLE = 15
# A request held rather than answered takes its whole timeout (a produce) or lasts until
# ZooKeeper is back (a group request); answered at once is well under half of that.
HELD_TIMEOUT_MS = 10_000
PROMPT_S = HELD_TIMEOUT_MS / 2000
NAMES = ["controller-1", "controller-2", "broker-1", "broker-2", "broker-3"]


class CutCluster:
    """A cluster whose every process reaches ZooKeeper through a proxy of its own."""

    def __init__(self, handle: ClusterHandle, proxies: dict[str, TcpProxy]) -> None:
        self.handle = handle
        self.proxies = proxies

    @property
    def local(self) -> LocalCluster:
        return self.handle.local


@pytest.fixture
def cut_cluster(tmp_path: Path) -> Iterator[CutCluster]:
    zk = ZooKeeperServer(tmp_path / "zk")
    zk.start()
    proxies = {name: TcpProxy.to(zk.connect_string) for name in NAMES}
    env_key = {"controller": "PAFKA_CONTROLLER_ZOOKEEPER", "broker": "PAFKA_BROKER_ZOOKEEPER"}
    local = LocalCluster(
        tmp_path / "cluster",
        brokers=3,
        controllers=2,
        zookeeper=zk.connect_string,
        broker_env={**TEST_BROKER_ENV, "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": str(LAG_MAX_MS)},
        service_env={
            name: {env_key[name.split("-")[0]]: proxy.address} for name, proxy in proxies.items()
        },
    )
    handle: ClusterHandle | None = None
    try:
        local.start()
        handle = ClusterHandle(local, zk.connect_string)
        yield CutCluster(handle, proxies)
    finally:
        for proxy in proxies.values():
            proxy.heal()
        if handle is not None:
            handle.close()
        local.stop()
        for proxy in proxies.values():
            proxy.close()
        zk.stop()


def _get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=1) as response:
        return json.loads(response.read())


def _metric(url: str, name: str) -> float | None:
    with urllib.request.urlopen(url + "/metrics", timeout=2) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    return None


def _wait(what: str, check: Callable[[], bool], timeout_s: float) -> float:
    """Seconds until ``check`` held; fails after ``timeout_s``."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout_s, f"not within {timeout_s:.0f}s: {what}"
        time.sleep(0.1)
    return time.monotonic() - started


# -- (a) the active controller -------------------------------------------------------------------


class StatusPoller:
    """Polls both controllers' /status every 100 ms; an unanswered poll counts as inactive."""

    def __init__(self, urls: dict[int, str]) -> None:
        self.urls = urls
        self.samples: list[tuple[float, dict[int, bool]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            seen = {}
            for cid, url in self.urls.items():
                try:
                    seen[cid] = bool(_get_json(url + "/status")["active"])
                except OSError:
                    seen[cid] = False
            self.samples.append((time.monotonic(), seen))
            self._stop.wait(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def longest_overlap_s(self) -> float:
        """The longest stretch during which both reported active."""
        longest, since = 0.0, None
        for at, seen in self.samples:
            if all(seen.values()):
                since = at if since is None else since
                longest = max(longest, at - since)
            else:
                since = None
        return longest


def _active_controller(cluster: CutCluster) -> int:
    """The controller holding ``/controller`` (waiting for one: a cluster just started may
    not have elected yet)."""
    zk = cluster.handle.zk
    _wait("a controller is elected", lambda: zk.exists(ControllerZNode.path()) is not None, 30)
    data, _ = zk.get(ControllerZNode.path())
    return ControllerZNode.decode(data).controller_id


def _status(cluster: CutCluster, controller_id: int) -> Any:
    return _get_json(cluster.local.services[f"controller-{controller_id}"].http_url + "/status")


def test_a_controller_cut_off_from_zookeeper_stops_reporting_active(
    cut_cluster: CutCluster,
) -> None:
    old = _active_controller(cut_cluster)
    new = 2 if old == 1 else 1
    urls = {c.id: c.http_url for c in cut_cluster.local.controllers()}
    poller = StatusPoller(urls)
    try:
        time.sleep(1)
        cut_cluster.proxies[f"controller-{old}"].blackhole()
        paused_after_s = _wait(
            "the cut-off controller reports inactive",
            lambda: not _status(cut_cluster, old)["active"],
            SESSION_TIMEOUT_S + 5,
        )
        assert paused_after_s <= SESSION_TIMEOUT_S
        old_url = urls[old]
        assert _metric(old_url, "kafka_controller_kafkacontroller_activecontrollercount") == 0
        assert _status(cut_cluster, old)["role"] == "paused"
        _wait("the other controller is active", lambda: _status(cut_cluster, new)["active"], 30)
        time.sleep(3)  # the cut lasts: the old one stays quiet
        assert not _status(cut_cluster, old)["active"]
        cut_cluster.proxies[f"controller-{old}"].heal()
        _wait(
            "the old controller is back, as a standby",
            lambda: (
                _status(cut_cluster, old)["zookeeper_connected"]
                and _status(cut_cluster, old)["role"] == "standby"
            ),
            30,
        )
        time.sleep(2)
    finally:
        poller.stop()
    assert _status(cut_cluster, new)["active"]
    assert not _status(cut_cluster, old)["active"]
    assert _active_controller(cut_cluster) == new
    overlap_s = poller.longest_overlap_s()
    print(f"paused after {paused_after_s:.1f}s; both active for at most {overlap_s:.1f}s")
    assert overlap_s <= SESSION_TIMEOUT_S


def test_a_controller_whose_cut_heals_within_the_session_resumes(cut_cluster: CutCluster) -> None:
    old = _active_controller(cut_cluster)
    epoch = _status(cut_cluster, old)["epoch"]
    proxy = cut_cluster.proxies[f"controller-{old}"]
    proxy.blackhole()
    paused_s = _wait(
        "the cut-off controller pauses",
        lambda: _status(cut_cluster, old)["role"] == "paused",
        SESSION_TIMEOUT_S,
    )
    # Healed before the session expires (kazoo notices at about 2/3 of it): same session.
    proxy.heal()
    _wait("the controller resumes", lambda: _status(cut_cluster, old)["active"], 15)
    assert _active_controller(cut_cluster) == old
    assert _status(cut_cluster, old)["epoch"] == epoch  # the same term, not a new election
    # Resumed with a full load: it knows the brokers again.
    assert _status(cut_cluster, old)["live_brokers"] == [1, 2, 3]
    print(f"paused after {paused_s:.1f}s, resumed")


# -- (b) a partition leader ----------------------------------------------------------------------


def _produce(address: tuple[str, int], topic: str, acks: int, timeout_ms: int) -> int:
    produce = ProduceRequest[8]
    request = produce(
        transactional_id=None,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            produce.TopicProduceData(
                name=topic,
                partition_data=[
                    produce.TopicProduceData.PartitionProduceData(
                        index=0, records=build_batch([uuid.uuid4().bytes])
                    )
                ],
            )
        ],
    )
    response: Any = request_once(address, request, ProduceResponse, 8)
    return int(response.responses[0].partition_responses[0].error_code)


def _new_topic(handle: ClusterHandle) -> str:
    """One partition on every broker."""
    topic = "cut-" + uuid.uuid4().hex[:6]
    handle.create_topic(topic, partitions=1, replication_factor=3)
    return topic


def _find_coordinator(address: tuple[str, int], group: str) -> Any:
    request = FindCoordinatorRequest[3](key=group, key_type=0)
    return request_once(address, request, FindCoordinatorResponse, 3)


# Healed at once (the sessions survive) or after the sessions expired (the controller moved on).
CUT_LENGTHS = pytest.mark.parametrize("hold_s", [0.0, SESSION_TIMEOUT_S * 2], ids=["short", "long"])


@CUT_LENGTHS
def test_a_leader_cut_off_from_zookeeper_and_followers_refuses_acks_all(
    cut_cluster: CutCluster, hold_s: float
) -> None:
    handle = cut_cluster.handle
    topic = _new_topic(handle)
    state = handle.partition_state(topic, 0)
    leader = state.leader
    followers = [b for b in state.isr if b != leader]
    address = handle.broker_address(leader)
    assert _produce(address, topic, -1, 10_000) == 0
    leader_url = cut_cluster.local.broker(leader).http_url
    assert _metric(leader_url, "pafka_broker_partitions_fenced") == 0
    for follower in followers:
        cut_cluster.local.send_signal(cut_cluster.local.broker(follower), signal.SIGSTOP)
    cut_cluster.proxies[f"broker-{leader}"].blackhole()
    try:
        started = time.monotonic()
        codes = []
        while True:
            sent = time.monotonic()
            code = _produce(address, topic, -1, HELD_TIMEOUT_MS)
            codes.append(code)
            if code == NOT_LEADER_OR_FOLLOWER:
                refused_in_s = time.monotonic() - sent
                break
            assert time.monotonic() - started < 30, f"never refused: {codes}"
        fenced_after_s = time.monotonic() - started
        assert refused_in_s < PROMPT_S  # answered at once, not held until the timeout
        assert _metric(leader_url, "pafka_broker_partitions_fenced") == 1
        # acks=1 is still taken, as Kafka takes it.
        assert _produce(address, topic, 1, 2000) == 0
        time.sleep(hold_s)
        # Still refused at once however long the cut lasts.
        assert _produce(address, topic, -1, 2000) == NOT_LEADER_OR_FOLLOWER
        assert _metric(leader_url, "pafka_broker_partitions_fenced") == 1
    finally:
        cut_cluster.proxies[f"broker-{leader}"].heal()
        for follower in followers:
            cut_cluster.local.send_signal(cut_cluster.local.broker(follower), signal.SIGCONT)
    print(f"fenced after {fenced_after_s:.1f}s of the cut; codes before: {codes}")
    _wait(
        "the leader is unfenced",
        lambda: _metric(leader_url, "pafka_broker_partitions_fenced") == 0,
        30,
    )

    def written() -> bool:
        now_leader = handle.partition_state(topic, 0).leader
        if now_leader < 0:
            return False
        try:
            return _produce(handle.broker_address(now_leader), topic, -1, 5000) == 0
        except OSError:
            return False

    _wait("an acks=all write succeeds after the heal", written, 60)
    log = Path(cut_cluster.local.broker(leader).log_path).read_text()
    assert log.count("refuse acks=all writes") >= 1
    assert "take acks=all writes again" in log


# -- (c) a group coordinator ---------------------------------------------------------------------


@CUT_LENGTHS
def test_a_coordinator_cut_off_from_zookeeper_answers_coordinator_not_available(
    cut_cluster: CutCluster, hold_s: float
) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    handle = cut_cluster.handle
    topic = _new_topic(handle)
    producer = Producer({"bootstrap.servers": handle.bootstrap, "acks": "all"})
    consumer = Consumer(
        {
            "bootstrap.servers": handle.bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 30_000,
        }
    )
    try:
        consumer.subscribe([topic])

        def consumed(value: bytes, timeout_s: float) -> None:
            producer.produce(topic, value)
            producer.flush(30)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None and msg.value() == value:
                    return
            raise AssertionError(f"{value!r} not consumed within {timeout_s:.0f}s")

        consumed(b"before", 60)
        coordinator = int(_find_coordinator(handle.broker_address(1), group).node_id)
        address = handle.broker_address(coordinator)
        cut_cluster.proxies[f"broker-{coordinator}"].blackhole()
        try:
            time.sleep(SESSION_TIMEOUT_S * 2 / 3 + 1)  # the broker notices the cut
            sent = time.monotonic()
            described: Any = request_once(
                address, DescribeGroupsRequest[0](groups=[group]), DescribeGroupsResponse, 0
            )
            assert described.groups[0].error_code == COORDINATOR_NOT_AVAILABLE
            assert time.monotonic() - sent < PROMPT_S  # at once, not once ZooKeeper is back
            sent = time.monotonic()
            found = _find_coordinator(address, group)
            assert found.error_code == COORDINATOR_NOT_AVAILABLE
            assert time.monotonic() - sent < PROMPT_S
            time.sleep(hold_s)
        finally:
            cut_cluster.proxies[f"broker-{coordinator}"].heal()
        consumed(b"after", 90)
    finally:
        consumer.close()
