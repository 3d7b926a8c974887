"""`pafka cluster stop|start|restart SERVICE` on a cluster the CLI started, and `cluster up`
beside a ZooKeeper it did not start."""

from __future__ import annotations

import ctypes
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pafka.errors import CoordinationError
from pafka.local.processes import process_alive
from pafka.local.zookeeper import ZooKeeperServer, ruok, served_data_dir

CLONE_NEWNET = 0x40000000


def pafka(
    home: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", *args],
        env={**os.environ, "PAFKA_HOME": str(home), **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def private_network() -> Iterator[None]:
    """This test's thread (and every process it starts) in a network namespace of its own,
    with only a loopback: its ports, 2181 included, are nobody else's."""
    if os.geteuid() != 0:
        pytest.skip("a network namespace of its own needs root")
    libc = ctypes.CDLL(None, use_errno=True)
    # A namespace belongs to a thread; the test's thread returns to this one afterwards.
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if libc.unshare(CLONE_NEWNET) != 0:
            pytest.skip(f"unshare(CLONE_NEWNET): {os.strerror(ctypes.get_errno())}")
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True, timeout=10)
        yield
    finally:
        back = libc.setns(original, CLONE_NEWNET)
        os.close(original)
        if back != 0:
            raise OSError(ctypes.get_errno(), "setns back to the test's network namespace")


def _state(home: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((home / "cluster.json").read_text())
    return loaded


def _service(home: Path, name: str) -> dict[str, Any]:
    return next(s for s in _state(home)["services"] if f"{s['kind']}-{s['id']}" == name)


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _isrs(home: Path, topic: str) -> list[str]:
    described = pafka(home, "topics", "describe", topic)
    assert described.returncode == 0, described.stderr
    return [line.rsplit("Isr: ", 1)[1] for line in described.stdout.splitlines()[1:]]


def _wait_for_isr(home: Path, topic: str, isr: set[str], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        current = _isrs(home, topic)
        if all(set(i.split(",")) == isr for i in current):
            return
        assert time.monotonic() < deadline, f"ISRs {current}, waiting for {sorted(isr)}"
        time.sleep(0.5)


def test_restart_stop_and_start_services_on_their_own_ports(tmp_path: Path) -> None:
    home = tmp_path / "home"
    up = pafka(home, "cluster", "up", "--brokers", "2", "--controllers", "1", "--gateways", "1")
    assert up.returncode == 0, up.stderr
    state = _state(home)
    zk_pid = state["zookeeper_pid"]
    try:
        assert state["zookeeper_owned"] is True
        assert not state["zookeeper"].endswith(":2181")
        created = pafka(
            home, "topics", "create", "svc", "--partitions", "2", "--replication-factor", "2"
        )
        assert created.returncode == 0, created.stderr
        _wait_for_isr(home, "svc", {"1", "2"})

        before = _service(home, "broker-2")
        restarted = pafka(home, "cluster", "restart", "broker-2")
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
        after = _service(home, "broker-2")
        assert (after["port"], after["http_port"]) == (before["port"], before["http_port"])
        assert after["pid"] != before["pid"] and not process_alive(
            before["pid"], before["started_ticks"]
        )
        assert after["env"] == before["env"]
        _wait_for_isr(home, "svc", {"1", "2"})
        produced = pafka(home, "produce", "svc", stdin="after-restart\n")
        assert produced.returncode == 0, produced.stderr

        gateway = _service(home, "gateway-1")
        url = f"http://{gateway['host']}:{gateway['http_port']}"
        stopped = pafka(home, "cluster", "stop", "gateway-1")
        assert stopped.returncode == 0, stopped.stderr
        assert not process_alive(gateway["pid"], gateway["started_ticks"])
        assert not _ready(url)
        status = pafka(home, "cluster", "status")
        assert status.returncode == 1 and "stopped" in status.stdout
        with socket.socket() as squatter:
            # The gateway's closed connections may leave its port in TIME_WAIT.
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind((gateway["host"], gateway["http_port"]))
            squatter.listen()
            refused = pafka(home, "cluster", "start", "gateway-1")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr
        assert f"port(s) {gateway['http_port']} are in use" in refused.stderr
        started = pafka(home, "cluster", "start", "gateway-1")
        assert started.returncode == 0, started.stdout + started.stderr
        assert _service(home, "gateway-1")["http_port"] == gateway["http_port"]
        assert _ready(url)

        unknown = pafka(home, "cluster", "restart", "broker-9")
        assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
        assert "no service 'broker-9'" in unknown.stderr and "gateway-1" in unknown.stderr
        twice = pafka(home, "cluster", "start", "broker-1")
        assert twice.returncode != 0 and "already running" in twice.stderr

        zk_restarted = pafka(home, "cluster", "restart", "zookeeper")
        assert zk_restarted.returncode == 0, zk_restarted.stderr
        assert _state(home)["zookeeper"] == state["zookeeper"]
        assert not process_alive(zk_pid, state["zookeeper_started_ticks"])
        zk_pid = _state(home)["zookeeper_pid"]
        assert served_data_dir(state["zookeeper"]) == str(Path(state["zookeeper_dir"]) / "data")
        status = pafka(home, "cluster", "status")
        assert status.stdout.splitlines()[0].startswith("zookeeper")
    finally:
        services = _state(home)["services"]
        down = pafka(home, "cluster", "down")
    assert down.returncode == 0, down.stderr
    assert not any(process_alive(s["pid"], s["started_ticks"]) for s in services)
    assert not process_alive(zk_pid) and not ruok(state["zookeeper"])


def test_service_commands_without_a_cluster_say_so(tmp_path: Path) -> None:
    result = pafka(tmp_path, "cluster", "restart", "broker-1")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "no cluster is running" in result.stderr


@pytest.mark.usefixtures("private_network")
def test_up_never_joins_a_zookeeper_it_did_not_start(tmp_path: Path) -> None:
    """Runs in a network namespace of its own (``private_network``), where 2181 and the default
    ports are this test's: a foreign ZooKeeper on 2181, `cluster up` in default-port mode."""
    foreign = ZooKeeperServer(tmp_path / "foreign", port=2181)
    foreign.start()
    try:
        home = tmp_path / "own"
        env = {"PAFKA_LOCAL_PORTS": "default"}
        up = pafka(home, "cluster", "up", "--brokers", "1", "--gateways", "0", env=env)
        assert up.returncode == 0, up.stderr
        state = _state(home)
        assert state["zookeeper_owned"] is True and state["zookeeper"] != "127.0.0.1:2181"
        assert served_data_dir(state["zookeeper"]) == str(Path(state["zookeeper_dir"]) / "data")
        assert pafka(home, "cluster", "down").returncode == 0
        assert ruok(foreign.connect_string)

        joined = tmp_path / "joined"
        up = pafka(
            joined, "cluster", "up", "--brokers", "1", "--gateways", "0",
            "--zookeeper", "127.0.0.1:2181/joined", env=env,
        )  # fmt: skip
        assert up.returncode == 0, up.stderr
        assert _state(joined)["zookeeper_owned"] is False
        refused = pafka(joined, "cluster", "stop", "zookeeper")
        assert refused.returncode != 0 and "not started by this cluster" in refused.stderr
        assert pafka(joined, "cluster", "down").returncode == 0
        assert ruok(foreign.connect_string) and foreign.process is not None
        assert foreign.process.poll() is None
    finally:
        foreign.stop()


def test_a_zookeeper_never_takes_another_for_itself(
    tmp_path: Path, zookeeper: ZooKeeperServer
) -> None:
    """Two starts racing for one port found free: the loser's ruok would be answered by the
    winner, so a start is ready only when the server answering names its own data dir."""
    loser = ZooKeeperServer(tmp_path / "loser", port=zookeeper.port)
    with pytest.raises(CoordinationError, match="another ZooKeeper"):
        loser.start()
    assert loser.process is None or loser.process.poll() is not None
    assert ruok(zookeeper.connect_string)


def test_a_zookeeper_in_a_relative_data_dir_knows_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make up` keeps its cluster in `.pafka`: ZooKeeper names that directory absolute."""
    monkeypatch.chdir(tmp_path)
    server = ZooKeeperServer(Path("relative-zk"))
    try:
        server.start()
        assert served_data_dir(server.connect_string) == str(tmp_path / "relative-zk" / "data")
    finally:
        server.stop()
