"""How many CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota.

A server sizes its worker pool by this, as the JVM's ``availableProcessors`` does in a
container: a pod limited to 1.5 CPUs on a 64-core node gets 2, not 64.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def cpu_budget(affinity: int, quota_cpus: float | None) -> int:
    """The CPUs to size for: the quota rounded up (a fraction of a CPU still runs a worker),
    never more than the affinity allows, at least one."""
    budget = affinity if quota_cpus is None else min(affinity, math.ceil(quota_cpus))
    return max(1, budget)


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2's ``cpu.max`` (``"max 100000"`` or ``"150000 100000"``) in CPUs; None when
    unlimited or unreadable."""
    fields = text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    try:
        quota, period = int(fields[0]), int(fields[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` in CPUs (-1: unlimited)."""
    try:
        quota, period = int(quota_text), int(period_text)
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def cgroup_quota_cpus(root: Path = CGROUP_ROOT) -> float | None:
    """The CPU quota of this process's cgroup (the container's CPU limit), if any. A container
    sees its own cgroup at the root of its cgroup namespace, which is where this looks."""
    try:
        return parse_cpu_max((root / "cpu.max").read_text())
    except OSError:
        pass
    try:
        v1 = root / "cpu"
        return parse_cfs(
            (v1 / "cpu.cfs_quota_us").read_text(), (v1 / "cpu.cfs_period_us").read_text()
        )
    except OSError:
        return None


def usable_cpus() -> int:
    return cpu_budget(len(os.sched_getaffinity(0)), cgroup_quota_cpus())
