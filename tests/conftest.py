"""Shared fixtures: one real ZooKeeper per test session, a fresh chroot per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from pafka.local.zookeeper import ZooKeeperServer

# Test clusters take ephemeral ports, never the well-known ones: one test's killed broker must
# not lose its port to another cluster started meanwhile (two suites, or `make up`, side by side).
os.environ.setdefault("PAFKA_LOCAL_PORTS", "ephemeral")

# Two shared cores in CI: timing-based health checks would fail tests for being slow, not wrong.
settings.register_profile(
    "pafka", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("pafka")


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(Path(tmp_path_factory.mktemp("zookeeper")))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def zk_connect(zookeeper: ZooKeeperServer) -> str:
    """A connect string with a chroot of its own, so tests never see each other's znodes."""
    from kazoo.client import KazooClient

    chroot = f"/t-{uuid.uuid4().hex[:12]}"
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(timeout=10)
    client.ensure_path(chroot)
    client.stop()
    client.close()
    return f"{zookeeper.connect_string}{chroot}"
