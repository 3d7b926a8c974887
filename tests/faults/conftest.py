"""A fresh cluster per fault test: 3 brokers, 2 controllers, a real ZooKeeper."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from pafka.local.cluster import LocalCluster
from pafka.local.zookeeper import ZooKeeperServer
from tests.faults import secured
from tests.integration.conftest import ClusterHandle


@contextlib.contextmanager
def fault_cluster_with(
    tmp_path: Path, broker_env: dict[str, str], *, sasl_ssl: bool | None = None
) -> Iterator[ClusterHandle]:
    """3 brokers with ``broker_env``, 2 controllers, a ZooKeeper of their own; secured end to
    end with SASL_SSL when asked, or when ``PAFKA_FAULTS_SECURITY=SASL_SSL``
    (:mod:`tests.faults.secured`)."""
    zk = ZooKeeperServer(tmp_path / "zk")
    zk.start()
    local = LocalCluster(
        tmp_path / "cluster",
        brokers=3,
        controllers=2,
        zookeeper=zk.connect_string,
        broker_env=dict(broker_env),
    )
    client_side = None
    if secured.requested() if sasl_ssl is None else sasl_ssl:
        client_side = secured.secure(local, tmp_path / "tls", zk.connect_string)
    local.start()
    handle = ClusterHandle(local, zk.connect_string)
    handle.clients = client_side  # type: ignore[attr-defined]
    handle.zookeeper_server = zk  # type: ignore[attr-defined]
    try:
        yield handle
    finally:
        handle.close()
        local.stop()
        zk.stop()


@pytest.fixture
def fault_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    with fault_cluster_with(tmp_path, {"PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000"}) as handle:
        yield handle
