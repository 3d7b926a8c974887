"""A bounded scan of one partition for the records matching a filter, pure: which records
match, which offsets each step reads, and where a scan stops and the next one continues.

A scan walks from an offset forward (towards the log end) or backward (towards the log start)
in windows of at most ``WINDOW_OFFSETS`` offsets, each read oldest first and looked at in the
scan's direction. A window whose records take more than a window's bytes is cut (:func:`trim`)
to what fits from the side the scan comes from, the rest left to the next window, so a step
holds at most about ``WINDOW_BYTES`` of records however large they are. The cap counts the
offsets the windows span, not only the records found in them, so a request never reads more
than the cap whatever gaps (compaction, transaction markers) the log has. A scan ends when the
cap is spent, enough matches are found (the next scan continues just past the last match), or
the log's start or end is reached.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from pafka.client.batch_reading import FetchedRecord

# Offsets one step reads at most: the records of one window are held in memory at once.
WINDOW_OFFSETS = 1000
# Bytes of records (keys, values, headers) one step keeps at most (but always one record).
WINDOW_BYTES = 8 * 1024 * 1024


class Direction(enum.StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"


@dataclass(frozen=True)
class RecordFilter:
    """What a record must have to match; every condition given must hold (none: all match)."""

    key: bytes | None = None  # the key equals this
    value_contains: bytes | None = None
    header_name: str | None = None  # a header of this name (case-sensitive, as Kafka's)
    header_value_contains: bytes | None = None  # in that header, or in any header unnamed

    def matches(self, record: FetchedRecord) -> bool:
        if self.key is not None and record.key != self.key:
            return False
        if self.value_contains is not None and (
            record.value is None or self.value_contains not in record.value
        ):
            return False
        if self.header_name is None and self.header_value_contains is None:
            return True
        return any(
            (self.header_name is None or name == self.header_name)
            and (
                self.header_value_contains is None
                or (value is not None and self.header_value_contains in value)
            )
            for name, value in record.headers
        )


@dataclass(frozen=True)
class Window:
    """Offsets ``[start, stop)``, read in one step."""

    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def next_window(
    direction: Direction, position: int, log_start: int, log_end: int, budget: int
) -> Window | None:
    """The offsets the next step reads from ``position`` (forward: the first offset to read;
    backward: the offset below which to read), within the log and the budget left; None when
    the scan is at the log's end (forward) or start (backward), or the budget is spent."""
    size = min(budget, WINDOW_OFFSETS)
    if size <= 0:
        return None
    if direction is Direction.FORWARD:
        start = max(position, log_start)
        stop = min(log_end, start + size)
    else:
        stop = min(position, log_end)
        start = max(log_start, stop - size)
    return Window(start, stop) if start < stop else None


def record_bytes(record: FetchedRecord) -> int:
    """What a record holds in memory beyond its fixed fields."""
    headers = sum(len(name) + len(value or b"") for name, value in record.headers)
    return len(record.key or b"") + len(record.value or b"") + headers


def trim(
    direction: Direction, window: Window, records: list[FetchedRecord], max_bytes: int
) -> tuple[Window, list[FetchedRecord]]:
    """The part of ``window`` one step keeps, with its records (oldest first): from the side
    the scan comes from, records while they total at most ``max_bytes`` (at least one); the
    window shrinks to them, and the next window starts where it now ends."""
    ordered = records if direction is Direction.FORWARD else records[::-1]
    kept: list[FetchedRecord] = []
    total = 0
    for record in ordered:
        size = record_bytes(record)
        if kept and total + size > max_bytes:
            break
        kept.append(record)
        total += size
    if len(kept) == len(records):
        return window, records
    if direction is Direction.FORWARD:
        return Window(window.start, kept[-1].offset + 1), kept
    kept.reverse()
    return Window(kept[0].offset, window.stop), kept


@dataclass(frozen=True)
class Step:
    """What one window gave: its matches in scan order, the records looked at, and where the
    scan goes on (forward: the next offset to read; backward: the offset below which)."""

    matches: list[FetchedRecord]
    scanned: int
    resume: int
    # Enough matches: the window was left part-way, just past the last match.
    full: bool


def scan_window(
    direction: Direction,
    window: Window,
    records: Sequence[FetchedRecord],
    record_filter: RecordFilter,
    wanted: int,
) -> Step:
    """Look at ``records`` (the window's, oldest first) in the scan's direction, stopping at
    the ``wanted``-th match."""
    inside = [r for r in records if window.start <= r.offset < window.stop]
    ordered = inside if direction is Direction.FORWARD else inside[::-1]
    matches: list[FetchedRecord] = []
    for looked, record in enumerate(ordered, 1):
        if record_filter.matches(record):
            matches.append(record)
            if len(matches) >= wanted:
                past = record.offset + 1 if direction is Direction.FORWARD else record.offset
                return Step(matches, looked, past, full=True)
    resume = window.stop if direction is Direction.FORWARD else window.start
    return Step(matches, len(ordered), resume, full=False)


def exhausted(direction: Direction, resume: int, log_start: int, log_end: int) -> bool:
    """Whether a scan stopped at ``resume`` has nothing left to read in its direction (a
    forward scan at the end may find records written later)."""
    if direction is Direction.FORWARD:
        return resume >= log_end
    return resume <= log_start
