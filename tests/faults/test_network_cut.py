"""A network cut between a leader and its followers: packets to and from the leader's Kafka port
silently dropped (nftables), then let through again. Followers must be fetching again within
seconds of the heal, not after TCP's retransmission backoff (minutes without deadlines).

The rule lives in an nftables table of this test's own, deleted whatever happens. It drops only
traffic between 127.0.0.1 and the leader's port: ZooKeeper and the control API (other ports)
stay reachable, and the test's producer, connecting from 127.0.0.2, still writes to the leader,
so the followers fall behind and leave the ISR.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.producer import ProduceResponse

from tests.faults.conftest import fault_cluster_with
from tests.faults.secured import ClientSide
from tests.integration.conftest import ClusterHandle
from tests.integration.wire import produce_request, roundtrip
from tests.unit.records_util import build_batch

pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(shutil.which("nft") is None, reason="needs nftables (nft) and root"),
]

TABLE = "pafka_network_cut_test"
CUT_S = 20.0
# Kafka's defaults would make the test wait 30 s for the first timeout; the mechanism is the same.
BROKER_ENV = {
    "PAFKA_BROKER_REPLICA_LAG_TIME_MAX_MS": "3000",
    "PAFKA_BROKER_REPLICA_SOCKET_TIMEOUT_MS": "5000",
}


@pytest.fixture
def cut_cluster(tmp_path: Path) -> Iterator[ClusterHandle]:
    with fault_cluster_with(tmp_path, BROKER_ENV) as handle:
        _wait(lambda: len(handle.broker_ids()) == 3, 30, "brokers did not register")
        yield handle


def _nft(*args: str) -> None:
    subprocess.run(["nft", *args], check=True, capture_output=True)


def _cut(port: int) -> None:
    _nft("add", "table", "inet", TABLE)
    _nft("add", "chain", "inet", TABLE, "out", "{ type filter hook output priority 0 ; }")
    for match in (
        ("ip", "saddr", "127.0.0.1", "tcp", "dport"),
        ("ip", "daddr", "127.0.0.1", "tcp", "sport"),
    ):
        _nft("add", "rule", "inet", TABLE, "out", *match, str(port), "drop")


def _heal() -> None:
    subprocess.run(["nft", "delete", "table", "inet", TABLE], capture_output=True)


def _produce_around_the_cut(address: tuple[str, int], topic: str, value: bytes) -> None:
    """acks=1 from 127.0.0.2, which the cut lets through."""
    request = produce_request(topic, 0, build_batch([value]))
    with socket.socket() as sock:
        sock.settimeout(15)
        sock.bind(("127.0.0.2", 0))
        sock.connect(address)
        response = roundtrip(sock, request, ProduceResponse, 8, 1)
    assert response.responses[0][1][0][1] == 0, response


def _wait(condition: object, timeout_s: float, what: str) -> float:
    """Seconds until ``condition()`` held; fails after ``timeout_s``."""
    assert callable(condition)
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout_s, what
        time.sleep(0.1)
    return time.monotonic() - start


def test_followers_fetch_again_within_seconds_of_a_healed_cut(cut_cluster: ClusterHandle) -> None:
    cut_cluster.create_topic("cut", partitions=1, replication_factor=3)
    state = cut_cluster.partition_state("cut", 0)
    leader = cut_cluster.broker_address(state.leader)
    # The port followers fetch from: the SASL_SSL listener on a cluster secured end to end.
    secured: ClientSide | None = getattr(cut_cluster, "clients", None)
    port = secured.inter_broker_ports[state.leader] if secured else leader[1]

    def isr() -> tuple[int, ...]:
        return tuple(cut_cluster.partition_state("cut", 0).isr)

    _cut(port)
    try:
        _produce_around_the_cut(leader, "cut", b"written during the cut")
        waited_s = _wait(lambda: len(isr()) == 1, 30, "the followers stayed in the ISR")
        time.sleep(max(CUT_S - waited_s, 0))
    finally:
        _heal()
    # Without deadlines the follower's connection sits in TCP retransmission backoff for
    # minutes; with them it is probing with fresh SYNs and reconnects at once.
    waited_s = _wait(lambda: len(isr()) == 3, 15, f"the ISR stayed {isr()} after the heal")
    print(f"ISR full again {waited_s:.1f}s after the heal")
