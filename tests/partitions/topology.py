"""The partition suite's cluster: which nodes there are and what a scenario is handed."""

from __future__ import annotations

from dataclasses import dataclass

from tests.integration.conftest import ClusterHandle
from tests.partitions.cuts import Cuts
from tests.partitions.netns import Network

BROKERS = 3
CONTROLLERS = 2
ZK_SESSION_TIMEOUT_MS = 6000
NODES = [
    "zookeeper",
    *(f"controller-{i}" for i in range(1, CONTROLLERS + 1)),
    *(f"broker-{i}" for i in range(1, BROKERS + 1)),
    "client",
]


@dataclass
class PartitionedCluster:
    network: Network
    cuts: Cuts
    cluster: ClusterHandle
