"""Compacted logs for the cleaner's tests: writing keyed records, reading a whole log back,
running a clean on this thread, and checking what a reopened log looks like."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pafka.records.batch import iter_batches
from pafka.records.encoding import Record, build_batch, decode_records
from pafka.storage import layout
from pafka.storage.clean_pass import CleanOutcome, CleanPlan
from pafka.storage.cleaning import Cleanable
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.log_cleaner import CleanerSettings, LogCleaner, run_in_thread
from pafka.storage.segment import Segment

KEY = ("t", 0)
SETTINGS = CleanerSettings(dedupe_buffer_bytes=1024 * 1024)


def compacted_config(**overrides: int | float | str) -> LogConfig:
    values: dict[str, int | float | str] = {
        "cleanup_policy": "compact",
        "segment_bytes": 10_000,
        "index_interval_bytes": 64,
        "retention_ms": -1,
        "min_cleanable_dirty_ratio": 0.0,
        "delete_retention_ms": 1_000,
    }
    values.update(overrides)
    return LogConfig(**values)  # type: ignore[arg-type]


def write(log: Log, key: bytes | None, value: bytes | None, now_ms: int) -> int:
    """One keyed record in a batch of its own, stamped ``now_ms``; its offset."""
    info = log.append(
        build_batch([(key, value, [])], timestamp_ms=now_ms), leader_epoch=0, now_ms=now_ms
    )
    return info.first_offset


def read_all(log: Log) -> list[Record]:
    """Every record from the log start to the log end, read as a consumer reads."""
    records: list[Record] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        raw = log.read(offset, 1 << 20)
        if not raw:
            break
        for _, header in iter_batches(raw):
            records.extend(
                r for r in decode_records(raw[_ : _ + header.size]) if r.offset >= offset
            )
            offset = max(offset, header.next_offset)
    return records


def cleaner_of(log: Log, settings: CleanerSettings = SETTINGS) -> LogCleaner:
    return LogCleaner(lambda: {KEY: log}, settings, runner=run_in_thread)


def clean(log: Log, now_ms: int, settings: CleanerSettings = SETTINGS) -> CleanOutcome | None:
    """One clean of ``log`` as the broker runs it (choose, plan, run, install), on a thread."""
    return asyncio.run(cleaner_of(log, settings).clean_once(now_ms))


def plan_of(log: Log, now_ms: int) -> tuple[CleanPlan, dict[int, Segment], Cleanable] | None:
    """The plan of the clean ``log`` is due, with the sealed segments it covers."""
    cleaner = cleaner_of(log)
    chosen = cleaner._choose(now_ms)
    if chosen is None:
        return None
    _, target, state = chosen
    plan, sealed = cleaner._plan(target, state, now_ms)
    return plan, sealed, state


def leftovers(directory: Path) -> list[str]:
    """Files an interrupted clean may leave: none may survive a log's opening."""
    return sorted(
        p.name
        for p in directory.iterdir()
        if p.name.endswith((layout.CLEANED_SUFFIX, layout.DELETED_SUFFIX, layout.SWAP_SUFFIX))
    )


def check_consistent(log: Log, expected: list[Record]) -> None:
    """The log reads exactly ``expected``; every record is found by its offset and by its
    timestamp; the segments are consecutive and their files are the only ones."""
    got = read_all(log)
    assert got == expected
    offsets = [r.offset for r in got]
    assert offsets == sorted(set(offsets))
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases))
    assert bases == layout.segment_base_offsets(log.directory)
    assert leftovers(log.directory) == []
    for a, b in zip(log.segments, log.segments[1:], strict=False):
        assert a.next_offset <= b.base_offset
    for record in got:
        raw = log.read(record.offset, 1)
        first = next(iter_batches(raw))[1]
        assert first.base_offset <= record.offset <= first.last_offset
    for record in got:
        found = log.offset_for_timestamp(record.timestamp)
        first = next(r for r in got if r.timestamp >= record.timestamp)
        assert found is not None and tuple(found) == (first.timestamp, first.offset)
