"""A cluster under real network partitions: every process in a network namespace of its own.

ZooKeeper, two controllers, three brokers and the client each run in a namespace joined to a
bridge of this test's own (``netns.py``); cuts are silent drops on that bridge (``cuts.py``).
The harness itself stays in the root namespace and watches through the bridge's observer
address, which no cut touches. The suite skips, saying why, where namespaces or nftables are
not permitted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pafka.local.cluster import LocalCluster, Placement
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer, java_available
from tests.integration.conftest import ClusterHandle
from tests.integration.conftest import pytest_runtest_makereport as pytest_runtest_makereport
from tests.partitions.cuts import Cuts
from tests.partitions.figures import FIGURES, table
from tests.partitions.netns import Network, namespaces_permitted
from tests.partitions.topology import (
    BROKERS,
    CONTROLLERS,
    NODES,
    ZK_SESSION_TIMEOUT_MS,
    PartitionedCluster,
)


@pytest.fixture(scope="session")
def namespaces_allowed() -> None:
    if not java_available():
        pytest.skip("ZooKeeper needs Java and Debian's zookeeper package")
    reason = namespaces_permitted()
    if reason is not None:
        pytest.skip(f"network partition suite needs namespaces and nftables: {reason}")


@pytest.fixture
def partitioned(namespaces_allowed: None, tmp_path: Path) -> Iterator[PartitionedCluster]:
    network = Network(NODES)
    cuts = Cuts(network)
    zk: ZooKeeperServer | None = None
    local: LocalCluster | None = None
    handle: ClusterHandle | None = None
    try:
        network.create()
        cuts.heal()  # the table exists from the start, empty
        zk = ZooKeeperServer(
            tmp_path / "zk",
            port=free_port(),
            host=network.addresses["zookeeper"],
            command_prefix=network.exec_prefix("zookeeper"),
        )
        # ruok and every later ZooKeeper read by the harness go through the observer address.
        zk.start()
        local = LocalCluster(
            tmp_path / "cluster",
            brokers=BROKERS,
            controllers=CONTROLLERS,
            zookeeper=zk.connect_string,
            broker_env={
                "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "5000",
                "PAFKA_BROKER_ZK_SESSION_TIMEOUT_MS": str(ZK_SESSION_TIMEOUT_MS),
            },
            controller_env={"PAFKA_CONTROLLER_ZK_SESSION_TIMEOUT_MS": str(ZK_SESSION_TIMEOUT_MS)},
            placement=lambda name: Placement(
                host=network.addresses[name], command_prefix=network.exec_prefix(name)
            ),
        )
        # Readiness is polled over HTTP from here, through the observer address.
        local.start()
        handle = ClusterHandle(local, zk.connect_string)
        yield PartitionedCluster(network, cuts, handle)
    finally:
        # Heal first: the brokers' controlled shutdowns need their controller.
        cuts.heal()
        if handle is not None:
            handle.close()
        if local is not None:
            local.stop(grace_s=10)
        if zk is not None:
            zk.stop()
        cuts.close()
        network.close()


@pytest.fixture
def cluster_handle(partitioned: PartitionedCluster) -> ClusterHandle:
    """The partitioned cluster's handle, named as a test argument so that the integration
    suite's report hook (imported above) prints the process logs of a failed scenario."""
    return partitioned.cluster


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not FIGURES:
        return
    terminalreporter.section("network partitions: availability figures")
    terminalreporter.write_line(table(FIGURES))
    out = Path(FIGURES[0]["figures_path"]).parent.parent / "partitions-figures.json"
    out.write_text(json.dumps(FIGURES, indent=2))
    terminalreporter.write_line(f"figures written to {out}")
