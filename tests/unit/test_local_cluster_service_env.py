"""LocalCluster's environment for one service by name (a proxied ZooKeeper, say)."""

from __future__ import annotations

from pathlib import Path

from pafka.local.cluster import LocalCluster


def test_service_env_reaches_only_the_named_service_and_wins(tmp_path: Path) -> None:
    cluster = LocalCluster(
        tmp_path,
        brokers=2,
        controllers=1,
        zookeeper="127.0.0.1:1",
        broker_env={"PAFKA_BROKER_LOG_LEVEL": "WARNING"},
        service_env={"broker-2": {"PAFKA_BROKER_ZOOKEEPER": "127.0.0.1:2", "X": "y"}},
    )
    one = cluster._environment(cluster.services["broker-1"])
    two = cluster._environment(cluster.services["broker-2"])
    assert one["PAFKA_BROKER_ZOOKEEPER"] == "127.0.0.1:1"
    assert "X" not in one
    assert two["PAFKA_BROKER_ZOOKEEPER"] == "127.0.0.1:2"
    assert two["PAFKA_BROKER_LOG_LEVEL"] == "WARNING"
