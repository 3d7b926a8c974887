"""Checkpoint files in Kafka's text format, written atomically (temp file, fsync, rename).

Log-dir wide offset files (high watermarks, recovery points, log start offsets)::

    0                      <- format version
    2                      <- entry count
    orders 0 1234          <- topic partition offset
    orders 1 99

``leader-epoch-checkpoint`` (per partition): version, count, then ``epoch start_offset`` lines.
A damaged file reads as empty: the log then recovers more conservatively, never less.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

VERSION = 0


def _write_atomic(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _read_entries(path: Path) -> list[list[str]] | None:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        if int(lines[0]) != VERSION:
            raise ValueError(f"unknown version {lines[0]}")
        count = int(lines[1])
        entries = [line.split() for line in lines[2 : 2 + count]]
        if len(entries) != count:
            raise ValueError("fewer entries than declared")
        return entries
    except (IndexError, ValueError) as exc:
        log.warning("ignoring damaged checkpoint %s: %s", path, exc)
        return None


def write_offsets(path: Path, offsets: dict[tuple[str, int], int]) -> None:
    lines = [str(VERSION), str(len(offsets))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    _write_atomic(path, lines)


def read_offsets(path: Path) -> dict[tuple[str, int], int]:
    entries = _read_entries(path) or []
    result: dict[tuple[str, int], int] = {}
    for entry in entries:
        if len(entry) == 3 and entry[1].isdigit():
            result[(entry[0], int(entry[1]))] = int(entry[2])
    return result


def write_epochs(path: Path, epochs: list[tuple[int, int]]) -> None:
    _write_atomic(path, [str(VERSION), str(len(epochs))] + [f"{e} {o}" for e, o in epochs])


def read_epochs(path: Path) -> list[tuple[int, int]]:
    entries = _read_entries(path) or []
    return [(int(e[0]), int(e[1])) for e in entries if len(e) == 2]
