"""LocalCluster's per-service environment."""

from __future__ import annotations

from pathlib import Path

from pafka.local.cluster import LocalCluster


def test_controller_and_broker_env_overrides_reach_their_services(tmp_path: Path) -> None:
    cluster = LocalCluster(
        tmp_path,
        brokers=1,
        controllers=1,
        zookeeper="127.0.0.1:1",
        broker_env={"PAFKA_BROKER_LOG_LEVEL": "WARNING"},
        controller_env={"PAFKA_CONTROLLER_PREFERRED_REBALANCE_INTERVAL_MS": "3600000"},
    )
    controller = cluster._environment(cluster.services["controller-1"])
    broker = cluster._environment(cluster.services["broker-1"])
    assert controller["PAFKA_CONTROLLER_PREFERRED_REBALANCE_INTERVAL_MS"] == "3600000"
    assert "PAFKA_BROKER_LOG_LEVEL" not in controller
    assert broker["PAFKA_BROKER_LOG_LEVEL"] == "WARNING"
    assert "PAFKA_CONTROLLER_PREFERRED_REBALANCE_INTERVAL_MS" not in broker
