"""LocalCluster's environment for one service by name (a proxied ZooKeeper, say)."""

from __future__ import annotations

from pathlib import Path

from pafka.local.cluster import LocalCluster


def test_service_env_reaches_only_the_named_service_and_wins(tmp_path: Path) -> None:
    proxied = {"PAFKA_BROKER_ZOOKEEPER": "127.0.0.1:2", "PAFKA_BROKER_LOG_LEVEL": "DEBUG"}
    cluster = LocalCluster(
        tmp_path,
        brokers=2,
        zookeeper="127.0.0.1:1",
        broker_env={"PAFKA_BROKER_LOG_LEVEL": "WARNING"},
        service_env={"broker-2": proxied},
    )
    envs = {name: cluster._environment(s) for name, s in cluster.services.items()}
    assert envs["broker-2"].items() >= proxied.items()
    assert envs["broker-1"]["PAFKA_BROKER_ZOOKEEPER"] == "127.0.0.1:1"
    assert envs["broker-1"]["PAFKA_BROKER_LOG_LEVEL"] == "WARNING"
    assert all(
        e["PAFKA_CONTROLLER_ZOOKEEPER"] == "127.0.0.1:1" for n, e in envs.items() if "con" in n
    )
