"""Descriptors held by logs: one per idle partition (its active log), plus a bounded cache.

Counts are of this process's descriptors open on files under the test's own directory.
"""

from __future__ import annotations

from pathlib import Path

from pafka.records.batch import iter_batches
from pafka.records.encoding import build_batch
from pafka.storage import layout
from pafka.storage.active_index import TAIL_ENTRIES
from pafka.storage.config import LogConfig
from pafka.storage.index import OFFSET_ENTRY
from pafka.storage.log import Log
from pafka.storage.log_manager import LogManager
from tests.unit.fds_util import open_fds_under

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=64, retention_ms=-1)
# Every batch indexed, segments large: the active indexes outgrow their in-memory tail.
DENSE = LogConfig(index_interval_bytes=1, retention_ms=-1)


def batch(value: bytes, ts: int) -> bytes:
    return build_batch([(None, value, [])], timestamp_ms=ts)


def first_offsets(raw: bytes | memoryview) -> list[int]:
    return [h.base_offset for _, h in iter_batches(raw)]


def test_many_logs_with_many_segments_hold_one_descriptor_each_plus_the_cache(
    tmp_path: Path,
) -> None:
    cache = 8
    manager = LogManager(tmp_path, SMALL, open_files=cache)
    logs = [manager.get_or_create("many", p) for p in range(20)]
    for log in logs:
        for i in range(40):
            log.append(batch(b"v%d" % i, 1000 + i), leader_epoch=0, now_ms=0)
        log.checkpoint()  # fsyncs and closes the rolled segments' pending descriptors
        log.high_watermark = log.log_end_offset
    assert all(len(log.segments) > 5 for log in logs)
    idle = open_fds_under(tmp_path)
    assert set(idle) == {layout.log_file(log.directory, log.active.base_offset) for log in logs}
    assert set(idle.values()) == {1}

    for log in logs:
        assert [first_offsets(log.read(i, 1)) for i in range(40)] == [[i] for i in range(40)]
        assert log.offset_for_timestamp(1017) == (1017, 17)
    after_reads = open_fds_under(tmp_path)
    assert sum(after_reads.values()) <= len(logs) + cache

    manager.close_all()
    assert not open_fds_under(tmp_path)


def test_active_indexes_spill_to_their_files_and_read_back(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "dense-0", DENSE)
    count = 3 * TAIL_ENTRIES
    for i in range(count):
        log.append(batch(b"v%d" % i, 10_000 + i), leader_epoch=0, now_ms=0)
    log.high_watermark = log.log_end_offset
    active = log.active
    assert active.offset_index.entries == count
    assert active.offset_index.tail_entries <= TAIL_ENTRIES + 1
    index_path = layout.index_file(log.directory, 0)
    assert index_path.stat().st_size >= (count - TAIL_ENTRIES - 1) * OFFSET_ENTRY.size
    assert set(open_fds_under(tmp_path)) == {layout.log_file(log.directory, 0)}

    assert [first_offsets(log.read(i, 1)) for i in range(count)] == [[i] for i in range(count)]
    assert log.offset_for_timestamp(10_005) == (10_005, 5)
    assert log.offset_for_timestamp(10_000 + count - 3) == (10_000 + count - 3, count - 3)

    log.flush()
    assert index_path.stat().st_size == count * OFFSET_ENTRY.size

    # Truncating into entries already on disk cuts the file; appending continues from there.
    log.truncate_to(100)
    assert index_path.stat().st_size <= 100 * OFFSET_ENTRY.size
    for i in range(100, 120):
        log.append(batch(b"w%d" % i, 20_000 + i), leader_epoch=0, now_ms=0)
    log.high_watermark = log.log_end_offset
    assert [first_offsets(log.read(i, 1)) for i in range(120)] == [[i] for i in range(120)]
    assert log.offset_for_timestamp(20_000) == (20_100, 100)
    log.close()


def test_a_crash_before_the_tail_was_written_loses_no_index_entry(tmp_path: Path) -> None:
    directory = tmp_path / "dense-0"
    log = Log.open(directory, DENSE)
    count = TAIL_ENTRIES + 40
    for i in range(count):
        log.append(batch(b"v%d" % i, 10_000 + i), leader_epoch=0, now_ms=0)
    on_disk = layout.index_file(directory, 0).stat().st_size // OFFSET_ENTRY.size
    assert on_disk < count  # the newest entries were only in memory
    log.close_uncleanly()
    for clean in (True, False):  # trusted (completed from the log) or rebuilt
        reopened = Log.open(directory, DENSE, clean_shutdown_known=clean)
        reopened.high_watermark = reopened.log_end_offset
        assert reopened.log_end_offset == count
        assert reopened.active.offset_index.entries == count
        assert [first_offsets(reopened.read(i, 1)) for i in range(count)] == [
            [i] for i in range(count)
        ]
        assert reopened.offset_for_timestamp(10_000 + count - 1) == (10_000 + count - 1, count - 1)
        reopened.close_uncleanly()


def test_rolled_indexes_are_written_whole_and_their_files_fsynced_with_the_next_flush(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "dense-0", DENSE)
    for i in range(TAIL_ENTRIES + 10):
        log.append(batch(b"v%d" % i, 10_000 + i), leader_epoch=0, now_ms=0)
    log.roll()
    sealed = log.segments[0]
    assert layout.index_file(sealed.directory, 0).stat().st_size == (
        (TAIL_ENTRIES + 10) * OFFSET_ENTRY.size
    )
    assert len(log._unflushed) == 3  # the log and both indexes, until the flush
    log.flush()
    assert not log._unflushed
    assert set(open_fds_under(tmp_path)) == {layout.log_file(log.directory, log.active.base_offset)}
    log.close()
