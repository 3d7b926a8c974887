"""Checkpoint files in Kafka's text format: a version line, a count line, then entries.

``leader-epoch-checkpoint``::

    0                      <- format version
    2                      <- entry count
    0 0                    <- epoch start_offset
    3 1250

``partition-offsets-checkpoint`` (same framing, one file per partition)::

    0
    3
    log_start_offset 100
    recovery_point 1250
    high_watermark 1240

``cleaner-offset-checkpoint`` (compacted logs; same framing, one file per partition)::

    0
    1
    first_dirty_offset 1200

Files are replaced atomically (write a temp file, rename). A missing or damaged file reads as
empty, and every reader then errs on the safe side: recovery point 0 means "scan everything",
high watermark 0 is raised to the log start, an empty epoch cache is rebuilt by new appends.
The offsets file is not fsynced: a stale one only makes recovery scan more.
"""

from __future__ import annotations

import itertools
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from pafka.storage import layout

log = logging.getLogger(__name__)

VERSION = 0


def _write_atomic(path: Path, lines: list[str], *, sync: bool) -> None:
    tmp = path.with_name(path.name + layout.TEMP_SUFFIX)
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_entries(path: Path) -> list[list[str]]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    try:
        if int(lines[0]) != VERSION:
            raise ValueError(f"unknown version {lines[0]}")
        count = int(lines[1])
        entries = [line.split() for line in lines[2 : 2 + count]]
        if len(entries) != count or any(len(e) != 2 for e in entries):
            raise ValueError("entries do not match the declared count")
        for entry in entries:
            int(entry[1])
        return entries
    except (IndexError, ValueError) as exc:
        log.warning("ignoring damaged checkpoint %s: %s", path, exc)
        return []


def write_epochs(path: Path, epochs: list[tuple[int, int]]) -> None:
    _write_atomic(
        path, [str(VERSION), str(len(epochs))] + [f"{e} {o}" for e, o in epochs], sync=True
    )


def read_epochs(path: Path) -> list[tuple[int, int]]:
    try:
        entries = [(int(e), int(o)) for e, o in _read_entries(path)]
    except ValueError:
        return []
    ordered = all(a[0] < b[0] and a[1] <= b[1] for a, b in itertools.pairwise(entries))
    return entries if ordered else []


@dataclass(frozen=True)
class PartitionOffsets:
    log_start_offset: int = 0
    recovery_point: int = 0
    high_watermark: int = 0


def write_partition_offsets(path: Path, offsets: PartitionOffsets) -> None:
    lines = [
        f"log_start_offset {offsets.log_start_offset}",
        f"recovery_point {offsets.recovery_point}",
        f"high_watermark {offsets.high_watermark}",
    ]
    _write_atomic(path, [str(VERSION), str(len(lines)), *lines], sync=False)


def read_partition_offsets(path: Path) -> PartitionOffsets:
    values = {name: int(value) for name, value in _read_entries(path)}
    return PartitionOffsets(
        log_start_offset=max(values.get("log_start_offset", 0), 0),
        recovery_point=max(values.get("recovery_point", 0), 0),
        high_watermark=max(values.get("high_watermark", 0), 0),
    )


def write_cleaner_offset(path: Path, first_dirty_offset: int) -> None:
    """Where the next clean's dirty section starts. Not fsynced: a stale value only makes the
    next clean map more."""
    _write_atomic(path, [str(VERSION), "1", f"first_dirty_offset {first_dirty_offset}"], sync=False)


def read_cleaner_offset(path: Path) -> int:
    """The checkpointed first dirty offset; 0 (the log start, once bounded) when none."""
    values = {name: int(value) for name, value in _read_entries(path)}
    return max(values.get("first_dirty_offset", 0), 0)
