"""Ports of local clusters: picked so that a stopped service finds its own ports again.

A service stopped by ``pafka cluster stop`` (or killed by a fault test) comes back on the ports
the state file records. Two things could take them meanwhile: another local cluster picking
"free" ports, and the kernel handing them out as the source port of some outgoing connection.
Each port a cluster picks is therefore reserved in a directory shared by every local cluster on
the machine (one file per port, created exclusively, naming the owner's data dir), and
``ephemeral`` ports are drawn from below the kernel's ephemeral range, which ``connect()`` and
``bind(port=0)`` never hand out.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

HOST = "127.0.0.1"
RESERVATIONS_DIR = Path(tempfile.gettempdir()) / "pafka-ports"
STATE_FILE = "cluster.json"
# A reservation whose cluster never wrote its state file (a start that crashed) lapses after
# this long; a start writes its state within its readiness timeout, far below it.
UNCLAIMED_RESERVATION_S = 600.0
LOWEST_PICKED_PORT = 10000
_PICK_ATTEMPTS = 200
_random = random.SystemRandom()


def port_free(port: int, host: str = HOST) -> bool:
    with socket.socket() as s:
        # The servers bind with SO_REUSEADDR too, so a port in TIME_WAIT counts as free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def kernel_ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _reservation(port: int) -> Path:
    return RESERVATIONS_DIR / str(port)


def _lapsed(path: Path) -> bool:
    """True when the reservation's cluster is gone: its data dir deleted, or its state file
    absent (stopped, or never started) for longer than a start may take."""
    try:
        owner = Path(path.read_text().strip())
        age_s = time.time() - path.stat().st_mtime
    except OSError:
        return True
    if not owner.is_dir():
        return True
    return not (owner / STATE_FILE).exists() and age_s > UNCLAIMED_RESERVATION_S


def reserve(port: int, owner: Path) -> bool:
    """Claim ``port`` for the cluster in ``owner``; False when another live cluster holds it."""
    RESERVATIONS_DIR.mkdir(parents=True, exist_ok=True)
    path = _reservation(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            with contextlib.suppress(OSError):
                if path.read_text().strip() == str(owner):
                    return True
            if not _lapsed(path):
                return False
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(owner))
        return True
    return False


def release(ports: Iterable[int], owner: Path) -> None:
    """Give back the ports ``owner`` reserved (never another cluster's)."""
    for port in ports:
        path = _reservation(port)
        with contextlib.suppress(OSError):
            if path.read_text().strip() == str(owner):
                path.unlink()


def free_port(host: str = HOST) -> int:
    """A port free now for a process about to bind it, drawn as :func:`pick_port` draws (below
    the kernel's ephemeral range, where no outgoing connection's source port can take it in the
    meantime, and never a port a local cluster reserved), but not reserved itself: for servers
    that are not restarted on the same port later."""
    return _draw(lambda port: not _reservation(port).exists() and port_free(port, host))


def pick_port(preferred: int | None, owner: Path, taken: set[int]) -> int:
    """A free port reserved for ``owner``: ``preferred`` when usable, else one drawn from below
    the kernel's ephemeral range."""
    if preferred is not None and _claim(preferred, owner, taken):
        return preferred
    return _draw(lambda port: _claim(port, owner, taken))


def _draw(usable: Callable[[int], bool]) -> int:
    """A random port below the kernel's ephemeral range that ``usable`` accepts."""
    low, _ = kernel_ephemeral_range()
    for _ in range(_PICK_ATTEMPTS):
        port = _random.randrange(LOWEST_PICKED_PORT, max(low, LOWEST_PICKED_PORT + 1000))
        if usable(port):
            return port
    raise OSError(f"no free port below {low} after {_PICK_ATTEMPTS} attempts")


def _claim(port: int, owner: Path, taken: set[int]) -> bool:
    if port in taken or not port_free(port) or not reserve(port, owner):
        return False
    taken.add(port)
    return True
