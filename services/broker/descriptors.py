"""The broker's open file descriptors against its limit: raised at start, watched while running.

A broker holds about one descriptor per hosted partition (its active segment's log), a bounded
cache of sealed segments' files, and one per connection; past RLIMIT_NOFILE every ``open`` and
``accept`` fails. So, as the JVM does for Kafka (``-XX:+MaxFDLimit``), the broker raises its soft
limit to the hard one at start, and its periodic work counts its descriptors: crossing
:data:`WARN_RATIO` of the soft limit logs one warning, repeated only after the count fell back
under :data:`REARM_RATIO` (and was logged as such). The gauges are prometheus_client's
``process_open_fds`` and ``process_max_fds`` (:mod:`services.broker.metrics`).
"""

from __future__ import annotations

import enum
import logging
import os
import resource
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

WARN_RATIO = 0.8
# Below the warning threshold, so that a count hovering at 80% does not warn on every check.
REARM_RATIO = 0.7
FD_DIR = Path("/proc/self/fd")


class Crossing(enum.Enum):
    NONE = "none"
    ABOVE = "above"  # crossed the warning threshold upwards: warn
    BELOW = "below"  # back under the re-arm threshold after a warning


def crossing(warned: bool, open_fds: int, limit: int) -> Crossing:
    """What a count of ``open_fds`` against a soft ``limit`` means, given whether the monitor
    is in the warned state (it has warned and not seen the count fall back since)."""
    if limit <= 0:
        return Crossing.NONE
    if not warned and open_fds >= WARN_RATIO * limit:
        return Crossing.ABOVE
    if warned and open_fds < REARM_RATIO * limit:
        return Crossing.BELOW
    return Crossing.NONE


@dataclass(frozen=True)
class LimitChange:
    soft_before: int
    soft_after: int
    hard: int


def raise_soft_limit() -> LimitChange:
    """Raise the soft RLIMIT_NOFILE to the hard limit (logged); a refusal is logged, not fatal."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard or hard == resource.RLIM_INFINITY:
        # Linux refuses an unlimited soft limit on open files (fs.nr_open caps it): keep it.
        log.info("open files limit: %d (hard %s)", soft, _show(hard))
        return LimitChange(soft, soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("cannot raise the open files limit from %d to %d: %s", soft, hard, exc)
        return LimitChange(soft, soft, hard)
    log.info("open files limit raised from %d to the hard limit %d", soft, hard)
    return LimitChange(soft, hard, hard)


def _show(limit: int) -> str:
    return "unlimited" if limit == resource.RLIM_INFINITY else str(limit)


def count_open_descriptors(fd_dir: Path = FD_DIR) -> int | None:
    """Descriptors this process has open, or None where ``/proc`` cannot tell."""
    try:
        # listdir opens the directory itself: that descriptor is not the broker's.
        return len(os.listdir(fd_dir)) - 1
    except OSError:
        return None


class DescriptorMonitor:
    """Warns once per crossing of :data:`WARN_RATIO` of the soft limit (on a worker thread)."""

    def __init__(self, fd_dir: Path = FD_DIR) -> None:
        self._fd_dir = fd_dir
        self.warned = False

    def check(self) -> Crossing:
        open_fds = count_open_descriptors(self._fd_dir)
        if open_fds is None:
            return Crossing.NONE
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if limit == resource.RLIM_INFINITY:
            return Crossing.NONE
        change = crossing(self.warned, open_fds, limit)
        if change is Crossing.ABOVE:
            self.warned = True
            log.warning(
                "%d of %d open file descriptors in use (%.0f%%, warning at %.0f%%): each hosted "
                "partition holds one and each connection one; raise the open files limit "
                "(ulimit -n, the pod's or unit's LimitNOFILE) or host fewer partitions",
                open_fds,
                limit,
                100 * open_fds / limit,
                100 * WARN_RATIO,
            )
        elif change is Crossing.BELOW:
            self.warned = False
            log.info(
                "%d of %d open file descriptors in use, back under %.0f%%",
                open_fds,
                limit,
                100 * REARM_RATIO,
            )
        return change
