"""LocalCluster's per-service environment and the descriptor limit of the processes it starts."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from pafka.local.cluster import LocalCluster, _raise_descriptor_limit


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


def _soft_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-file limit in /proc")


def test_a_child_started_under_a_low_soft_limit_is_lifted_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 256)
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard)),
    )
    try:
        assert _soft_limit(child.pid) == lowered
        _raise_descriptor_limit(child.pid)
        assert _soft_limit(child.pid) == hard
    finally:
        child.kill()
        child.wait()
