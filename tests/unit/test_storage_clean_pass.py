"""One clean on a real log, case by case: tombstones kept then removed, producers' last batches,
transactional batches, keyless records, an offset map too small for the dirty section."""

from __future__ import annotations

import time
from pathlib import Path

from pafka.records.batch import iter_batches
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.log_cleaner import CleanerSettings
from pafka.storage.offset_map import MIN_CAPACITY
from tests.unit.compaction_util import (
    check_consistent,
    clean,
    compacted_config,
    plan_of,
    read_all,
    write,
)

T0 = 1_700_000_000_000
RETENTION_MS = 1_000
CONFIG = compacted_config(delete_retention_ms=RETENTION_MS)


def sealed(log: Log, now_ms: int) -> None:
    """Everything written is sealed and below the high watermark."""
    log.roll(now_ms)
    log.high_watermark = log.log_end_offset


def headers(log: Log) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, records, producer id) of every batch in the log."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        raw = log.read(offset, 1 << 20)
        if not raw:
            break
        for _, h in iter_batches(raw):
            if h.last_offset >= offset:
                out.append((h.base_offset, h.last_offset, h.records_count, h.producer_id))
            offset = max(offset, h.next_offset)
    return out


def latest(log: Log) -> dict[bytes | None, bytes | None]:
    return {r.key: r.value for r in read_all(log)}


def tombstone_history(log: Log) -> int:
    """Two keys, one deleted, in segments of their own; the first clean covers the tombstone
    at T0 + 10; then new writes, so later cleans have work. The tombstone's offset."""
    write(log, b"a", b"1", T0)
    log.roll(T0)
    write(log, b"b", b"1", T0)
    log.roll(T0)
    tombstone = write(log, b"a", None, T0)
    sealed(log, T0)
    assert clean(log, T0 + 10) is not None
    assert latest(log) == {b"b": b"1", b"a": None}
    write(log, b"c", b"1", T0 + 20)
    sealed(log, T0 + 20)
    return tombstone


def test_a_tombstone_stays_for_delete_retention_then_goes(tmp_path: Path) -> None:
    # Segments too full to merge.
    log = Log.open(
        tmp_path / "t-0", compacted_config(segment_bytes=150, delete_retention_ms=RETENTION_MS)
    )
    tombstone = tombstone_history(log)
    assert clean(log, T0 + 9 + RETENTION_MS) is not None  # its horizon not reached yet
    assert any(r.offset == tombstone for r in read_all(log))
    write(log, b"d", b"1", T0 + 30)
    sealed(log, T0 + 30)
    assert clean(log, T0 + 10 + RETENTION_MS) is not None
    assert latest(log) == {b"b": b"1", b"c": b"1", b"d": b"1"}
    check_consistent(log, read_all(log))


def test_a_tombstone_goes_when_its_segment_merges_with_newer_ones(tmp_path: Path) -> None:
    # Cleans closer together than delete.retention.ms, each merging the tombstone's segment
    # with new ones: its horizon is in its batch (KIP-534), so merging never postpones it
    # (Kafka 2.x's segment times did: KAFKA-8522).
    log = Log.open(tmp_path / "t-0", CONFIG)
    tombstone_history(log)
    for step in range(1, 6):
        now = T0 + 10 + step * (RETENTION_MS // 2 + 1)
        write(log, b"x", b"%d" % step, now)
        sealed(log, now)
        assert clean(log, now) is not None
    assert b"a" not in latest(log)


def test_a_tombstone_goes_at_its_horizon_with_nothing_else_written(tmp_path: Path) -> None:
    """KIP-534: a log whose cleaned tombstones reached their horizon is cleaned again even
    though nothing new was written (it is not dirty), and only then."""
    log = Log.open(tmp_path / "t-0", CONFIG)
    write(log, b"a", b"1", T0)
    write(log, b"b", b"1", T0)
    write(log, b"a", None, T0)
    sealed(log, T0)
    assert clean(log, T0 + 10) is not None
    assert latest(log) == {b"a": None, b"b": b"1"}
    assert log.earliest_delete_horizon_ms == T0 + 10 + RETENTION_MS
    assert clean(log, T0 + 9 + RETENTION_MS) is None  # nothing dirty, no horizon passed
    assert clean(log, T0 + 10 + RETENTION_MS) is not None
    assert latest(log) == {b"b": b"1"}
    assert log.earliest_delete_horizon_ms is None
    assert clean(log, T0 + 10 * RETENTION_MS) is None
    check_consistent(log, read_all(log))


def test_a_tombstone_in_the_dirty_section_is_never_removed(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    write(log, b"a", b"1", T0)
    write(log, b"a", None, T0)
    sealed(log, T0)
    # However old the segment, a tombstone's first clean keeps it.
    assert clean(log, T0 + 100 * RETENTION_MS) is not None
    assert latest(log) == {b"a": None}


def test_a_producers_last_batch_survives_empty(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    for sequence in (0, 2):
        batch = build_batch(
            [(b"a", b"p", []), (b"b", b"p", [])],
            timestamp_ms=T0,
            producer_id=7,
            producer_epoch=3,
            base_sequence=sequence,
        )
        log.append(batch, leader_epoch=0, now_ms=T0)
    write(log, b"a", b"new", T0 + 1)
    write(log, b"b", b"new", T0 + 2)
    sealed(log, T0 + 2)
    assert clean(log, T0 + 5) is not None
    # The first batch went; the producer's last stays, emptied, so its sequence survives.
    assert headers(log)[:1] == [(2, 3, 0, 7)]
    raw = log.read(2, 1 << 20)
    first = next(iter_batches(raw))[1]
    assert (first.producer_epoch, first.base_sequence) == (3, 2)
    assert latest(log) == {b"a": b"new", b"b": b"new"}
    # The empty batch holds no record a timestamp lookup could return.
    found = log.offset_for_timestamp(T0)
    assert found is not None and tuple(found) == (T0 + 1, 4)
    check_consistent(log, read_all(log))


def test_keyless_records_are_dropped(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    write(log, None, b"no key", T0)
    write(log, b"a", b"1", T0)
    sealed(log, T0)
    assert clean(log, T0 + 5) is not None
    assert [(r.key, r.value) for r in read_all(log)] == [(b"a", b"1")]


def test_a_full_offset_map_cleans_in_several_passes(tmp_path: Path) -> None:
    config: LogConfig = compacted_config(segment_bytes=4_000)
    log = Log.open(tmp_path / "t-0", config)
    keys = [f"key-{i}".encode() for i in range(MIN_CAPACITY + 500)]
    for rounds in range(2):
        for start in range(0, len(keys), 50):
            chunk = keys[start : start + 50]
            batch = build_batch([(k, b"v%d" % rounds, []) for k in chunk], timestamp_ms=T0)
            log.append(batch, leader_epoch=0, now_ms=T0)
    sealed(log, T0)
    expected = {k: b"v1" for k in keys}
    ends = []
    for _ in range(4):
        planned = plan_of(log, T0 + 5)
        if planned is None:
            break
        outcome = clean(log, T0 + 5, CleanerSettings(dedupe_buffer_bytes=0))
        assert outcome is not None
        ends.append(outcome.end_offset)
        assert latest(log) == expected
    assert len(ends) >= 2 and ends[0] < log.active.base_offset  # the map filled up
    assert ends[-1] == log.active.base_offset
    records = read_all(log)
    assert len(records) == len(keys)
    check_consistent(log, records)


def test_a_truncation_below_the_checkpoint_resurrects_nothing(tmp_path: Path) -> None:
    """An unclean leader's log cut below what this replica cleaned: the records written there
    afterwards are dirty, so a tombstone among them is mapped before it may go."""
    now = int(time.time() * 1000)  # new segments' files carry the real time
    log = Log.open(tmp_path / "t-0", compacted_config(segment_bytes=100))
    for key in (b"a", b"b", b"c", b"d"):
        write(log, key, b"old", now)
    sealed(log, now)
    assert clean(log, now) is not None
    assert log.cleaner_offset == 4
    log.truncate_to(2)
    assert log.cleaner_offset == 2
    deleted = write(log, b"a", None, now)
    write(log, b"e", b"new", now)
    sealed(log, now)
    for step in range(1, 4):
        at = now + step * 2 * RETENTION_MS
        write(log, b"x", b"%d" % step, at)
        sealed(log, at)
        assert clean(log, at) is not None
        values = latest(log)
        assert values.get(b"a") is None  # deleted, or its tombstone: never "old" again
    assert all(r.offset != deleted for r in read_all(log))  # the tombstone went, in time


def test_a_log_restarted_at_a_lower_offset_lowers_the_checkpoint(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG)
    for key in (b"a", b"b", b"a"):
        write(log, key, b"v", T0)
    sealed(log, T0)
    assert clean(log, T0 + 5) is not None and log.cleaner_offset == 3
    log.truncate_fully_and_start_at(1)
    assert log.cleaner_offset == 1


def test_timestamp_lookups_skip_gaps_and_records_below_the_log_start(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", compacted_config(cleanup_policy="compact,delete"))
    batch = build_batch([(b"a", b"1", []), (b"b", b"1", []), (b"c", b"1", [])], timestamp_ms=T0)
    log.append(batch, leader_epoch=0, now_ms=T0)
    write(log, b"b", b"2", T0)  # 3
    write(log, b"d", b"1", T0)  # 4
    sealed(log, T0)
    assert clean(log, T0 + 5) is not None  # offset 1 goes: a gap inside the first batch
    log.delete_records_before(2)
    found = log.offset_for_timestamp(T0)
    assert found is not None and tuple(found) == (T0, 2)
    log.delete_records_before(3)
    found = log.offset_for_timestamp(T0)
    assert found is not None and tuple(found) == (T0, 3)


def test_a_segment_a_clean_emptied_does_not_hold_back_retention(tmp_path: Path) -> None:
    """compact,delete: retention goes oldest first and stops at a segment it spares; an empty
    segment is judged by its file's time, as Kafka's largestTimestamp falls back to it."""
    now = int(time.time() * 1000)  # the files carry the real time
    config = compacted_config(
        cleanup_policy="compact,delete", retention_ms=60_000, segment_bytes=100
    )
    log = Log.open(tmp_path / "t-0", config)
    write(log, b"a", b"1", now)
    log.roll(now)
    write(log, b"b", b"1", now)
    log.roll(now)
    write(log, b"a", b"2", now)
    sealed(log, now)
    assert clean(log, now) is not None
    assert log.segments[0].size == 0  # a's first value went: an empty segment
    assert log.apply_retention(now + 1_000) == 0  # nothing past retention yet
    assert log.apply_retention(now + 10 * 60_000) == 3
    assert read_all(log) == [] and log.log_start_offset == 3


def test_an_emptied_batch_goes_once_its_producer_wrote_again(tmp_path: Path) -> None:
    """Kafka keeps an empty batch only while it is its producer's last."""
    log = Log.open(tmp_path / "t-0", CONFIG)

    def produce(key: bytes, sequence: int, now: int) -> None:
        batch = build_batch(
            [(key, b"p", [])], timestamp_ms=now, producer_id=7, producer_epoch=0,
            base_sequence=sequence,
        )  # fmt: skip
        log.append(batch, leader_epoch=0, now_ms=now)

    produce(b"a", 0, T0)  # 0
    write(log, b"a", b"new", T0)  # 1
    sealed(log, T0)
    assert clean(log, T0 + 1) is not None
    assert headers(log)[0] == (0, 0, 0, 7)  # emptied, kept: the producer's last
    produce(b"b", 1, T0 + 2)  # 2
    write(log, b"b", b"new", T0 + 2)  # 3
    sealed(log, T0 + 2)
    assert clean(log, T0 + 3) is not None
    assert [h for h in headers(log) if h[3] == 7] == [(2, 2, 0, 7)]


def test_min_compaction_lag_keeps_young_segments_out_of_a_clean(tmp_path: Path) -> None:
    config = compacted_config(segment_bytes=100, min_compaction_lag_ms=1_000)
    log = Log.open(tmp_path / "t-0", config)
    write(log, b"a", b"1", T0)  # 0
    log.roll(T0)
    write(log, b"a", b"2", T0 + 800)  # 1: younger
    log.roll(T0 + 800)
    write(log, b"a", b"3", T0 + 900)  # 2
    sealed(log, T0 + 900)
    outcome = clean(log, T0 + 1_500)  # only the first segment is old enough
    assert outcome is not None and outcome.end_offset == 1
    assert [r.value for r in read_all(log)] == [b"1", b"2", b"3"]  # nothing mapped beyond
    outcome = clean(log, T0 + 2_000)  # now all sealed segments are
    assert outcome is not None and outcome.end_offset == 3
    assert [r.value for r in read_all(log)] == [b"3"]


def test_max_compaction_lag_makes_a_barely_dirty_log_due(tmp_path: Path) -> None:
    config = compacted_config(min_cleanable_dirty_ratio=0.99, max_compaction_lag_ms=5_000)
    log = Log.open(tmp_path / "t-0", config)
    for i in range(20):
        write(log, b"k%d" % i, b"v", T0)
    log.roll(T0)
    log.high_watermark = log.log_end_offset
    assert clean(log, T0 + 1) is not None  # everything dirty: the ratio is passed
    write(log, b"k0", b"w", T0 + 10)  # a little dirt, far under the ratio
    sealed(log, T0 + 10)
    assert clean(log, T0 + 5_010) is None  # not yet overdue
    assert clean(log, T0 + 5_011) is not None  # overdue: cleaned whatever the ratio
    assert latest(log)[b"k0"] == b"w" and len(read_all(log)) == 20
