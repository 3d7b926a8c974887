"""A fresh cluster per fault test: 3 brokers, 2 controllers, a real ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from tests.integration.conftest import ClusterHandle


@pytest.fixture
def fault_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    zk = ZooKeeperServer(tmp_path / "zk")
    zk.start()
    local = LocalCluster(
        tmp_path / "cluster",
        brokers=3,
        controllers=2,
        zookeeper=zk.connect_string,
        broker_env={"PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000"},
    )
    local.start()
    handle = ClusterHandle(local, zk.connect_string)
    handle.zookeeper_server = zk  # type: ignore[attr-defined]
    try:
        yield handle
    finally:
        handle.close()
        local.stop()
        zk.stop()
