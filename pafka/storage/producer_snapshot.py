"""Producer-state snapshots: ``{offset:020d}.snapshot``, the state as of that log offset.

Kafka's ``ProducerStateManager`` snapshot file (version 1), written at each segment roll (at the
new segment's base offset) and at a clean shutdown (at the log end), so that opening a log
replays only the batches after the newest snapshot instead of scanning segments::

    version   int16    1
    crc       uint32   CRC-32C of everything after this field
    entries   int32 count, then per producer:
      producer_id               int64
      producer_epoch            int16
      last_sequence             int32   of its last batch, -1 if none
      last_offset               int64   of its last batch, -1 if none
      offset_delta              int32   last_sequence - first sequence of that batch
      timestamp                 int64   max timestamp of that batch
      coordinator_epoch         int32   of the last transaction marker, -1 if none
      current_txn_first_offset  int64   first offset of its open transaction, -1 if none

A file is written whole under a temporary name, synced and renamed, so a crash leaves the old
set of snapshots or the new one; a snapshot that fails its CRC is deleted and the next older one
used, as Kafka does.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import crc32c

from pafka.storage import layout

log = logging.getLogger(__name__)

HEADER = struct.Struct(
    ">"
    "h"  # version  1
    "I"  # crc      CRC-32C of the count and the entries
)
COUNT = struct.Struct(">i")
ENTRY = struct.Struct(
    ">"
    "q"  # producer_id
    "h"  # producer_epoch
    "i"  # last_sequence
    "q"  # last_offset
    "i"  # offset_delta
    "q"  # timestamp
    "i"  # coordinator_epoch
    "q"  # current_txn_first_offset
)
VERSION = 1


class SnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp_ms: int
    coordinator_epoch: int
    current_txn_first_offset: int


class CorruptSnapshotError(ValueError):
    """A snapshot file that cannot be trusted (bad version, CRC or length)."""


def encode(entries: Iterable[SnapshotEntry]) -> bytes:
    listed = list(entries)
    body = COUNT.pack(len(listed)) + b"".join(ENTRY.pack(*e) for e in listed)
    return HEADER.pack(VERSION, crc32c.crc32c(body)) + body


def decode(data: bytes) -> list[SnapshotEntry]:
    if len(data) < HEADER.size + COUNT.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc = HEADER.unpack_from(data)
    if version != VERSION:
        raise CorruptSnapshotError(f"snapshot version {version}, expected {VERSION}")
    body = memoryview(data)[HEADER.size :]
    if crc32c.crc32c(body) != crc:
        raise CorruptSnapshotError("snapshot failed its CRC check")
    (count,) = COUNT.unpack_from(body)
    if count < 0 or len(body) != COUNT.size + count * ENTRY.size:
        raise CorruptSnapshotError(f"snapshot claims {count} entries in {len(body)} bytes")
    return [SnapshotEntry(*e) for e in ENTRY.iter_unpack(body[COUNT.size :])]


def write(directory: Path, offset: int, entries: Iterable[SnapshotEntry]) -> None:
    path = layout.snapshot_file(directory, offset)
    temp = layout.with_suffix(path, layout.TEMP_SUFFIX)
    data = encode(entries)
    with open(temp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, path)


def load_latest(directory: Path, at_most: int) -> tuple[int, list[SnapshotEntry]] | None:
    """(offset, entries) of the newest readable snapshot at or below ``at_most``."""
    for offset in reversed(layout.snapshot_offsets(directory)):
        if offset > at_most:
            continue
        path = layout.snapshot_file(directory, offset)
        try:
            return offset, decode(path.read_bytes())
        except (CorruptSnapshotError, OSError) as exc:
            log.warning("deleting producer snapshot %s: %s", path, exc)
            path.unlink(missing_ok=True)
    return None


def delete_outside(directory: Path, start: int, end: int) -> None:
    """Delete the snapshots below ``start`` (the log start) or above ``end`` (the log end)."""
    for offset in layout.snapshot_offsets(directory):
        if offset < start or offset > end:
            layout.snapshot_file(directory, offset).unlink(missing_ok=True)
