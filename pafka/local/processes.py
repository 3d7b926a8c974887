"""Processes of a local cluster known by pid and start time, so a recorded pid reused by some
other process after a reboot or a long stop is never signalled as if it were ours."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def start_ticks(pid: int) -> int:
    """The process's start time (clock ticks after boot, /proc/PID/stat field 22); 0 if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Fields after the command name, which may hold spaces and parentheses.
        return int(stat.rsplit(") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def process_alive(pid: int, started_ticks: int = 0) -> bool:
    """True when ``pid`` runs and is not a zombie; when ``started_ticks`` is known, only if it is
    still the process that started then."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return started_ticks == 0
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat.rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return True
    if fields[0] == "Z":
        return False
    return started_ticks == 0 or int(fields[19]) == started_ticks


def terminate(pid: int, started_ticks: int, grace_s: float, poll: float = 0.05) -> None:
    """SIGTERM, then SIGKILL if it outlives ``grace_s``; returns once it is gone."""
    if not process_alive(pid, started_ticks):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while process_alive(pid, started_ticks) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(poll)
    if process_alive(pid, started_ticks):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    # A process in uninterruptible sleep outlives SIGKILL for a while; never wait forever.
    deadline = time.monotonic() + 10.0
    while process_alive(pid, started_ticks) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(poll)


def _reap(pid: int) -> None:
    # Our own child (a service this process started) stays a zombie until waited for.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
