"""Port reservations of local clusters, and processes known by pid and start time."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pafka.local import ports
from pafka.local.processes import process_alive, start_ticks, terminate


@pytest.fixture(autouse=True)
def reservations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "reservations"
    monkeypatch.setattr(ports, "RESERVATIONS_DIR", directory)
    return directory


def _cluster(tmp_path: Path, name: str, *, running: bool) -> Path:
    owner = tmp_path / name
    owner.mkdir()
    if running:
        (owner / ports.STATE_FILE).write_text("{}")
    return owner


def test_a_port_reserved_by_a_live_cluster_is_not_picked_by_another(tmp_path: Path) -> None:
    first = _cluster(tmp_path, "first", running=True)
    second = _cluster(tmp_path, "second", running=True)
    port = ports.pick_port(None, first, set())
    assert ports.reserve(port, first)  # its own reservation, again
    assert not ports.reserve(port, second)
    assert ports.pick_port(port, second, set()) != port
    ports.release([port], second)  # never another cluster's
    assert not ports.reserve(port, second)
    ports.release([port], first)
    assert ports.reserve(port, second)


def test_reservations_of_clusters_gone_lapse(tmp_path: Path, reservations: Path) -> None:
    deleted = _cluster(tmp_path, "deleted", running=True)
    assert ports.reserve(20001, deleted)
    deleted.joinpath(ports.STATE_FILE).unlink()
    deleted.rmdir()
    stopped = _cluster(tmp_path, "stopped", running=False)
    assert ports.reserve(20002, stopped)
    taker = _cluster(tmp_path, "taker", running=True)
    assert ports.reserve(20001, taker)
    # A cluster still starting (no state file yet) keeps its ports until a start is overdue.
    assert not ports.reserve(20002, taker)
    old = os.stat(reservations / "20002").st_mtime - ports.UNCLAIMED_RESERVATION_S - 1
    os.utime(reservations / "20002", (old, old))
    assert ports.reserve(20002, taker)


def test_picked_ports_are_free_and_below_the_kernels_ephemeral_range(tmp_path: Path) -> None:
    owner = _cluster(tmp_path, "owner", running=True)
    low, _ = ports.kernel_ephemeral_range()
    taken: set[int] = set()
    picked = [ports.pick_port(None, owner, taken) for _ in range(20)]
    assert len(set(picked)) == 20 and set(picked) == taken
    assert all(ports.LOWEST_PICKED_PORT <= p < low for p in picked)
    with socket.socket() as busy:
        busy.bind((ports.HOST, 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert not ports.port_free(port)
        assert ports.pick_port(port, owner, set()) != port


def test_a_process_is_known_by_its_start_time() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ticks = start_ticks(child.pid)
        assert ticks > 0 and process_alive(child.pid, ticks)
        # The same pid started at another time is some other process: never ours to signal.
        assert not process_alive(child.pid, ticks + 1)
        terminate(child.pid, ticks + 1, grace_s=1.0)
        assert child.poll() is None
        terminate(child.pid, ticks, grace_s=5.0)
        assert not process_alive(child.pid, ticks)
    finally:
        child.kill()
        child.wait()
    assert start_ticks(child.pid) == 0
