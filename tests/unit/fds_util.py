"""Counting a process's open descriptors by the files they point to (Linux ``/proc``)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path


def open_fds_under(directory: Path, pid: int | str = "self") -> Counter[Path]:
    """How many descriptors of process ``pid`` are open on each file under ``directory``."""
    root = directory.resolve()
    counts: Counter[Path] = Counter()
    fd_dir = Path(f"/proc/{pid}/fd")
    for name in os.listdir(fd_dir):
        try:
            target = Path(os.readlink(fd_dir / name))
        except OSError:
            continue  # closed while listing
        if target.is_relative_to(root):
            counts[target] += 1
    return counts
