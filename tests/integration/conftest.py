"""A real pafka cluster (ZooKeeper, 2 controllers, 3 brokers as processes) for a test module.

The cluster is shared by the tests of a session (starting one costs seconds); each test uses
topics of its own. Process logs are printed when a test fails.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from pafka.admin import topics as admin
from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from pafka.zk.znodes import BROKER_IDS, BrokerInfo, PartitionState

# Kafka waits 3 s before the first rebalance of an empty group so that members starting together
# land in one generation; tests start their members together and need not wait that long.
TEST_BROKER_ENV = {"PAFKA_BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS": "300"}


class ClusterHandle:
    """Test-facing helpers over a LocalCluster."""

    def __init__(self, local: LocalCluster, zk_connect: str) -> None:
        self.local = local
        self.zk_connect = zk_connect
        self.zk = KazooClient(hosts=zk_connect)
        self.zk.start(timeout=15)

    @property
    def bootstrap(self) -> str:
        return str(self.local.bootstrap)

    @property
    def gateways(self) -> list[str]:
        """Base URLs of the cluster's REST gateways (two, to show any replica serves)."""
        return [g.http_url for g in self.local.gateways()]

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()

    def broker_ids(self) -> list[int]:
        return sorted(int(b) for b in self.zk.get_children(BROKER_IDS))

    def broker_address(self, broker_id: int) -> tuple[str, int]:
        data, _ = self.zk.get(BrokerInfo.path(broker_id))
        info = BrokerInfo.decode(broker_id, data)
        return info.host, info.port

    def broker_data_dirs(self) -> list[Path]:
        return [Path(d) for d in self.local.broker_data_dirs()]

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        data, _ = self.zk.get(PartitionState.path(topic, partition))
        return PartitionState.decode(topic, partition, data)

    def leader_address(self, topic: str, partition: int) -> tuple[str, int]:
        return self.broker_address(self.partition_state(topic, partition).leader)

    def create_topic(
        self,
        name: str,
        *,
        partitions: int,
        replication_factor: int,
        config: dict[str, str] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        """Create through ZooKeeper and wait until every broker's metadata shows the leaders."""
        admin.create_topic(self.zk, name, partitions, replication_factor, config or {})
        self.wait_for_leaders(name, partitions, timeout_s)

    def wait_for_leaders(self, name: str, partitions: int, timeout_s: float = 30.0) -> None:
        from kafka.protocol.metadata import MetadataRequest, MetadataResponse

        from tests.integration.wire import request_once

        deadline = time.monotonic() + timeout_s
        pending = set(self.broker_ids())
        while pending:
            for broker_id in sorted(pending):
                resp: Any = request_once(
                    self.broker_address(broker_id),
                    MetadataRequest[1](topics=[MetadataRequest[1].MetadataRequestTopic(name=name)]),
                    MetadataResponse,
                    1,
                )
                topic = resp.topics[0]
                if (
                    topic.error_code == 0
                    and len(topic.partitions) == partitions
                    and all(p.error_code == 0 and p.leader_id >= 0 for p in topic.partitions)
                ):
                    pending.discard(broker_id)
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"brokers {sorted(pending)} have no leaders for {name}")
            if pending:
                time.sleep(0.1)


@contextlib.contextmanager
def own_cluster(
    tmp_path_factory: pytest.TempPathFactory, name: str, **options: Any
) -> Iterator[ClusterHandle]:
    """A cluster with a ZooKeeper of its own, for a module that kills and pauses processes
    (the shared ``cluster`` must stay whole for everyone else)."""
    zk = ZooKeeperServer(Path(tmp_path_factory.mktemp(f"{name}-zk")))
    zk.start()
    local = LocalCluster(
        Path(tmp_path_factory.mktemp(name)), zookeeper=zk.connect_string, **options
    )
    try:
        local.start()
        handle = ClusterHandle(local, zk.connect_string)
        try:
            yield handle
        finally:
            handle.close()
    finally:
        local.stop()
        zk.stop()


@pytest.fixture(scope="session")
def cluster_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(Path(tmp_path_factory.mktemp("cluster-zk")))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_zookeeper: ZooKeeperServer
) -> Iterator[ClusterHandle]:
    local = LocalCluster(
        Path(tmp_path_factory.mktemp("cluster")),
        brokers=3,
        controllers=2,
        zookeeper=cluster_zookeeper.connect_string,
        broker_env=TEST_BROKER_ENV,
        gateways=2,
    )
    local.start()
    handle = ClusterHandle(local, cluster_zookeeper.connect_string)
    try:
        yield handle
    finally:
        handle.close()
        local.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        # The shared cluster or a module's own (whatever the fixture's name).
        for handle in getattr(item, "funcargs", {}).values():
            if isinstance(handle, ClusterHandle):
                report.sections.append(("pafka process logs", handle.local.dump_logs()))
    return report
