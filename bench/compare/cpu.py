"""CPU seconds of a system's server processes, their descendants included."""

from __future__ import annotations

import contextlib

import psutil


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time so far of ``pids`` and every live descendant, each counted once,
    plus what their exited, reaped children used."""
    seen: set[int] = set()
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                if process.pid in seen:
                    continue
                seen.add(process.pid)
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    times = process.cpu_times()
                    total += times.user + times.system + times.children_user
                    total += times.children_system
    return total
