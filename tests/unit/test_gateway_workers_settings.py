"""How many gateway workers: ``PAFKA_GATEWAY_WORKERS``, else the CPUs the process may use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cpus import cgroup_quota_cpus, cpu_budget, parse_cfs, parse_cpu_max, usable_cpus
from pafka.errors import ConfigError
from services.gateway.settings import GatewaySettings


def test_workers_setting() -> None:
    assert GatewaySettings.from_env({"PAFKA_GATEWAY_WORKERS": "3"}).workers == 3
    assert GatewaySettings.from_env({}).workers == usable_cpus()
    assert GatewaySettings.from_env({"PAFKA_GATEWAY_WORKERS": ""}).workers == usable_cpus()
    with pytest.raises(ConfigError, match="PAFKA_GATEWAY_WORKERS must be >= 1, got 0"):
        GatewaySettings.from_env({"PAFKA_GATEWAY_WORKERS": "0"})
    with pytest.raises(ConfigError, match="PAFKA_GATEWAY_WORKERS must be an integer"):
        GatewaySettings.from_env({"PAFKA_GATEWAY_WORKERS": "auto"})


def test_idle_timeout_setting() -> None:
    assert GatewaySettings.from_env({}).idle_timeout_ms == 30_000
    settings = GatewaySettings.from_env({"PAFKA_GATEWAY_IDLE_TIMEOUT_MS": "75000"})
    assert settings.idle_timeout_ms == 75_000
    with pytest.raises(ConfigError, match="PAFKA_GATEWAY_IDLE_TIMEOUT_MS must be >= 1"):
        GatewaySettings.from_env({"PAFKA_GATEWAY_IDLE_TIMEOUT_MS": "0"})


def test_the_default_is_this_process_affinity_here() -> None:
    # This machine's container sets no CPU quota the process can see, or one at least as large.
    assert 1 <= usable_cpus() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("max 100000", None),
        ("150000 100000", 1.5),
        ("200000 100000\n", 2.0),
        ("50000 100000", 0.5),
        ("", None),
        ("garbage", None),
        ("0 100000", None),
    ],
)
def test_cgroup_v2_cpu_max(text: str, cpus: float | None) -> None:
    assert parse_cpu_max(text) == cpus


def test_cgroup_v1_cfs_quota() -> None:
    assert parse_cfs("-1", "100000") is None
    assert parse_cfs("250000\n", "100000\n") == 2.5
    assert parse_cfs("x", "100000") is None


def test_the_quota_is_read_from_v2_then_v1(tmp_path: Path) -> None:
    assert cgroup_quota_cpus(tmp_path) is None
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_quota_cpus(tmp_path) == 3.0
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_quota_cpus(tmp_path) == 1.5


@given(st.integers(1, 512), st.none() | st.floats(0.001, 1024))
def test_the_budget_is_the_quota_rounded_up_within_the_affinity(
    affinity: int, quota: float | None
) -> None:
    budget = cpu_budget(affinity, quota)
    assert 1 <= budget <= affinity
    if quota is not None and quota <= affinity:
        assert budget - 1 < quota <= budget or budget == 1


def test_examples() -> None:
    assert cpu_budget(64, 1.5) == 2
    assert cpu_budget(64, 0.1) == 1
    assert cpu_budget(2, 8.0) == 2
    assert cpu_budget(8, None) == 8


def test_local_cluster_gateways_run_one_process_unless_asked(tmp_path: Path) -> None:
    from pafka.local.cluster import LocalCluster

    cluster = LocalCluster(
        tmp_path,
        brokers=0,
        controllers=0,
        gateways=2,
        zookeeper="127.0.0.1:1",
        service_env={"gateway-2": {"PAFKA_GATEWAY_WORKERS": "2"}},
    )
    envs = {name: cluster._environment(s) for name, s in cluster.services.items()}
    assert envs["gateway-1"]["PAFKA_GATEWAY_WORKERS"] == "1"
    assert envs["gateway-2"]["PAFKA_GATEWAY_WORKERS"] == "2"
