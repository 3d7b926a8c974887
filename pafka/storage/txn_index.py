"""The transaction index of a segment: the aborted transactions whose marker it holds.

Kafka's ``.txnindex`` layout, one fixed-size entry per aborted transaction, in marker order::

    version             int16   0
    producer_id         int64
    first_offset        int64   the transaction's first record
    last_offset         int64   its ABORT marker
    last_stable_offset  int64   the partition's stable offset once it was aborted

read_committed fetches ask for the aborted transactions overlapping what they return
(:func:`collect_aborted`, Kafka's ``collectAbortedTxns``). The file is small (one entry per
aborted transaction) and read whole; entries are appended with one write each. A torn trailing
entry (a crash mid-write) is ignored when read and cut off by the next truncation.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from pafka.storage import layout

ENTRY = struct.Struct(
    ">"
    "h"  # version             0
    "q"  # producer_id
    "q"  # first_offset
    "q"  # last_offset
    "q"  # last_stable_offset
)
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode(entry: AbortedTxn) -> bytes:
    return ENTRY.pack(VERSION, *entry)


def decode(data: bytes) -> list[AbortedTxn]:
    """The whole entries of ``data``, in order (a partial trailing entry is left out)."""
    whole = len(data) - len(data) % ENTRY_SIZE
    return [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data[:whole])]


def read(path: Path) -> list[AbortedTxn]:
    try:
        return decode(path.read_bytes())
    except FileNotFoundError:
        return []


def append(path: Path, entry: AbortedTxn) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, encode(entry))
    finally:
        os.close(fd)


def truncate(path: Path, offset: int) -> None:
    """Drop the entries whose marker is at or above ``offset`` (the log was truncated there);
    like Kafka, everything from the first such entry on."""
    entries = read(path)
    keep = next((i for i, e in enumerate(entries) if e.last_offset >= offset), len(entries))
    if keep == len(entries) and (not path.exists() or path.stat().st_size == keep * ENTRY_SIZE):
        return
    if keep == 0:
        path.unlink(missing_ok=True)
        return
    with open(path, "r+b") as f:
        f.truncate(keep * ENTRY_SIZE)


def adopt_orphans(directory: Path) -> None:
    """Move the entries of transaction indexes whose segment is gone into the index of the
    segment now covering their offsets: a clean that merged segments and was completed by
    recovery (``swap``) before the log moved them itself."""
    bases = layout.segment_base_offsets(directory)
    for base in layout.txn_index_base_offsets(directory):
        if base in bases:
            continue
        orphan = layout.txn_index_file(directory, base)
        covering = [b for b in bases if b < base]
        if covering:
            for entry in read(orphan):
                append(layout.txn_index_file(directory, covering[-1]), entry)
        orphan.unlink(missing_ok=True)


def collect(
    entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound: int
) -> tuple[list[AbortedTxn], bool]:
    """(entries overlapping ``[fetch_offset, upper_bound)``, whether later segments can add
    none): Kafka's ``TransactionIndex.collectAbortedTxns``."""
    found = []
    for entry in entries:
        if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound:
            found.append(entry)
        if entry.last_stable_offset >= upper_bound:
            return found, True
    return found, False


def collect_aborted(paths: Iterable[Path], fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
    """The aborted transactions overlapping ``[fetch_offset, upper_bound)``, from the indexes
    of the segment holding ``fetch_offset`` and those after it, in order."""
    found: list[AbortedTxn] = []
    for path in paths:
        more, complete = collect(read(path), fetch_offset, upper_bound)
        found += more
        if complete:
            break
    return found
