"""A cluster's own ZooKeeper never starts beside another server holding its port."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from pafka.errors import CoordinationError
from pafka.local import own_zookeeper
from pafka.local.own_zookeeper import OwnZooKeeper
from pafka.local.ports import free_port
from pafka.local.zookeeper import ZooKeeperServer, four_letter, java_available


def test_a_port_held_past_the_wait_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(own_zookeeper, "PORT_RELEASE_WAIT_S", 0.3)
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        own = OwnZooKeeper(ZooKeeperServer(tmp_path / "zk", port=port))
        started = time.monotonic()
        with pytest.raises(CoordinationError, match=f"its port {port} is in use"):
            own.start(detach=False)
        assert time.monotonic() - started >= 0.3
    assert own.pid is None


@pytest.mark.skipif(not java_available(), reason="needs Java and Debian's zookeeper")
def test_a_port_released_during_the_wait_is_taken(tmp_path: Path) -> None:
    """What a restart meets when the stopped server's socket closes a moment late."""
    port = free_port()
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", port))
    squatter.listen()
    threading.Timer(0.5, squatter.close).start()
    own = OwnZooKeeper(ZooKeeperServer(tmp_path / "zk", port=port))
    own.start(detach=False)
    try:
        assert own.alive()
        assert four_letter(own.connect_string, b"ruok") == b"imok"
    finally:
        own.stop(grace_s=10)
