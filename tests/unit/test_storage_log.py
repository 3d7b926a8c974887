"""The segmented log, case by case: reads, recovery, indexes, checkpoints, retention, manager."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pafka.errors import (
    CorruptMessageError,
    InvalidRecordError,
    KafkaStorageError,
    OffsetOutOfRangeError,
)
from pafka.records.batch import assign_offsets, iter_batches
from pafka.records.encoding import build_batch
from pafka.storage import layout
from pafka.storage.checkpoints import read_epochs, read_partition_offsets
from pafka.storage.config import LogConfig
from pafka.storage.epochs import LeaderEpochCache
from pafka.storage.files import FileCache
from pafka.storage.log import Log
from pafka.storage.log_manager import LogManager
from pafka.storage.retention import SegmentInfo, segments_to_delete

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=64, retention_ms=-1)


def batch(*values: bytes, ts: int = 1000) -> bytes:
    return build_batch([(None, v, []) for v in values], timestamp_ms=ts)


def bases(raw: bytes | memoryview) -> list[int]:
    return [h.base_offset for _, h in iter_batches(raw)]


def filled(path: Path, n: int = 30, config: LogConfig = SMALL) -> Log:
    log = Log.open(path, config)
    for i in range(n):
        log.append(batch(b"v%d" % i, ts=10_000 + 100 * i), leader_epoch=0, now_ms=0)
    log.high_watermark = log.log_end_offset
    return log


def test_read_returns_one_whole_batch_even_past_max_bytes(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=64))
    log.append(batch(b"x" * 300), leader_epoch=0, now_ms=0)
    log.append(batch(b"y"), leader_epoch=0, now_ms=0)
    assert bases(log.read(0, 1)) == [0]
    assert bases(log.read(0, 10_000)) == [0, 1]
    assert log.read(2, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(3, 100)


def test_read_never_crosses_max_offset(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    assert bases(log.read(0, 1 << 20, max_offset=3)) == [0, 1, 2]
    assert log.read(5, 1 << 20, max_offset=5) == b""
    assert bases(log.read(12, 1 << 20, max_offset=13)) == [12]


def test_read_from_the_middle_of_a_multi_record_batch(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    log.append(batch(b"a", b"b", b"c"), leader_epoch=0, now_ms=0)
    assert bases(log.read(2, 1)) == [0]


def test_corrupt_or_foreign_produce_is_refused(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    raw = bytearray(batch(b"x"))
    raw[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        log.append(bytes(raw), leader_epoch=0, now_ms=0)
    with pytest.raises(InvalidRecordError):
        log.append(assign_offsets(batch(b"x"), 7), leader_epoch=0, now_ms=0)
    assert log.log_end_offset == 0 and log.active.size == 0


def test_reopen_after_clean_close(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    segments = len(log.segments)
    assert segments > 3
    log.high_watermark = 20
    log.close()
    assert (tmp_path / "t-0" / layout.CLEAN_SHUTDOWN_FILE).exists()
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert not (tmp_path / "t-0" / layout.CLEAN_SHUTDOWN_FILE).exists()
    assert len(reopened.segments) == segments
    assert (reopened.log_end_offset, reopened.high_watermark) == (30, 20)
    assert reopened.recovery_point == 30
    assert bases(reopened.read(17, 1)) == [17]
    reopened.append(batch(b"more"), leader_epoch=1, now_ms=0)
    assert reopened.log_end_offset == 31


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
def test_index_rebuilt_when_deleted(tmp_path: Path, suffix: str) -> None:
    filled(tmp_path / "t-0").close()
    for index in (tmp_path / "t-0").glob("*" + suffix):
        index.unlink()
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert reopened.log_end_offset == 30
    assert all(s.offset_index.entries for s in reopened.segments if s.size)
    assert [bases(reopened.read(i, 1)) for i in (0, 17, 29)] == [[0], [17], [29]]
    assert reopened.offset_for_timestamp(10_000 + 100 * 17) == (10_000 + 100 * 17, 17)


def test_damaged_index_is_rebuilt(tmp_path: Path) -> None:
    filled(tmp_path / "t-0").close()
    first = layout.index_file(tmp_path / "t-0", 0)
    first.write_bytes(b"\x7f\xff\xff\xff\x7f\xff\xff\xff")  # points far past the log
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert [bases(reopened.read(i, 1)) for i in range(30)] == [[i] for i in range(30)]


def test_torn_tail_is_cut_and_later_segments_dropped(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    victim = log.segments[1]
    cut_at = victim.base_offset + 1
    log.close_uncleanly()
    # Corrupt the second batch of the second segment; everything from there on is lost.
    position = victim.position_of(cut_at)
    assert position is not None
    with open(victim.log_path, "r+b") as f:
        f.seek(position + 40)
        f.write(b"\xff\xff")
    recovered_files = Log.open(tmp_path / "t-0", SMALL)
    assert recovered_files.log_end_offset == cut_at
    assert len(recovered_files.segments) == 2
    recovered_files.append(batch(b"after"), leader_epoch=3, now_ms=0)
    assert bases(recovered_files.read(cut_at, 1)) == [cut_at]


def test_clean_marker_trusted_unless_told(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0", 3)
    log.close()
    with open(log.active.log_path, "ab") as f:
        f.write(b"\x00" * 10)  # garbage after a clean close: still cut
    reopened = Log.open(tmp_path / "t-0", SMALL, clean_shutdown_known=False)
    assert reopened.log_end_offset == 3
    assert reopened.active.size == os.path.getsize(reopened.active.log_path)


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    for i in range(20):
        log.append(batch(b"x", ts=10_000 + 100 * i), leader_epoch=0, now_ms=0)
    log.append(batch(b"a", b"b", b"c", ts=50_000), leader_epoch=0, now_ms=0)
    assert log.offset_for_timestamp(10_000) == (10_000, 0)
    assert log.offset_for_timestamp(10_150) == (10_200, 2)
    assert log.offset_for_timestamp(11_900) == (11_900, 19)
    assert log.offset_for_timestamp(40_000) == (50_000, 20)
    assert log.offset_for_timestamp(99_999) is None
    assert log.max_timestamp_offset() == (50_000, 20)


def test_leader_epochs_survive_reopen(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    for epoch in (0, 0, 2, 2, 5):
        log.append(batch(b"x"), leader_epoch=epoch, now_ms=0)
    log.close()
    assert read_epochs(tmp_path / "t-0" / layout.LEADER_EPOCH_CHECKPOINT) == [
        (0, 0),
        (2, 2),
        (5, 4),
    ]
    text = (tmp_path / "t-0" / layout.LEADER_EPOCH_CHECKPOINT).read_text()
    assert text == "0\n3\n0 0\n2 2\n5 4\n"
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert reopened.leader_epoch_cache.entries == [(0, 0), (2, 2), (5, 4)]
    assert reopened.end_offset_for_epoch(2) == (2, 4)
    assert reopened.end_offset_for_epoch(3) == (2, 4)
    assert reopened.end_offset_for_epoch(5) == (5, 5)
    reopened.truncate_to(3)
    assert reopened.leader_epoch_cache.entries == [(0, 0), (2, 2)]


def test_end_offset_for_epoch_is_kafkas() -> None:
    cache = LeaderEpochCache([(2, 10), (4, 20)])
    assert cache.end_offset_for(1, 30) == (1, 10)
    assert cache.end_offset_for(3, 30) == (2, 20)
    assert cache.end_offset_for(4, 30) == (4, 30)
    assert cache.end_offset_for(7, 30) == (-1, -1)
    assert LeaderEpochCache().end_offset_for(0, 5) == (-1, -1)


def test_truncate_into_a_sealed_segment(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    target = log.segments[1].base_offset + 1
    log.truncate_to(target)
    assert log.log_end_offset == target and len(log.segments) == 2
    log.append(batch(b"new"), leader_epoch=1, now_ms=0)
    log.close()
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert reopened.log_end_offset == target + 1


def test_follower_append_keeps_offsets_and_epochs(tmp_path: Path) -> None:
    leader = filled(tmp_path / "leader-0", 5)
    follower = Log.open(tmp_path / "follower-0", SMALL)
    data = bytes(leader.read(0, 1 << 20))
    info = follower.append_as_follower(data)
    assert info is not None and (info.first_offset, info.last_offset) == (0, 4)
    assert bytes(follower.read(0, 1 << 20)) == data
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(data)


def test_segments_roll_by_age_and_expire_by_time(tmp_path: Path) -> None:
    config = LogConfig(segment_ms=1000, retention_ms=10_000)
    log = Log.open(tmp_path / "t-0", config)
    now = 1_000_000
    for i in range(3):
        log.append(batch(b"old", ts=now - 60_000), leader_epoch=0, now_ms=now + 2000 * i)
    log.append(batch(b"new", ts=now), leader_epoch=0, now_ms=now + 10_000)
    assert len(log.segments) == 4, "a segment older than segment.ms rolls on the next append"
    log.high_watermark = log.log_end_offset
    assert log.apply_retention(now) == 3
    assert log.log_start_offset == 3
    assert bases(log.read(3, 1 << 20)) == [3]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=100, retention_bytes=0)
    log = Log.open(tmp_path / "t-0", config)
    for _ in range(5):
        log.append(batch(b"x" * 80), leader_epoch=0, now_ms=0)
    log.high_watermark = 2
    log.apply_retention(0)
    assert log.log_start_offset == 2


def test_retention_decision() -> None:
    segments = [SegmentInfo(100, 1_000, 10), SegmentInfo(100, 5_000, 20), SegmentInfo(100, 9, 30)]
    by_time = LogConfig(retention_ms=2_000)
    assert segments_to_delete(segments, by_time, 6_000, 30) == 1
    assert segments_to_delete(segments, by_time, 60_000, 30) == 2, "never the active segment"
    assert segments_to_delete(segments, by_time, 60_000, 5) == 0, "not past the high watermark"
    by_size = LogConfig(retention_ms=-1, retention_bytes=150)
    assert segments_to_delete(segments, by_size, 0, 30) == 1
    assert segments_to_delete(segments, LogConfig(retention_ms=-1), 0, 30, 20) == 2


def test_delete_records_before(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    assert log.delete_records_before(12) == 12
    assert log.log_start_offset == 12 and log.segments[0].base_offset <= 12
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 10)
    log.close()
    assert Log.open(tmp_path / "t-0", SMALL).log_start_offset == 12


def test_checkpoint_file(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0", 5)
    log.high_watermark = 4
    log.checkpoint()
    offsets = read_partition_offsets(tmp_path / "t-0" / layout.PARTITION_OFFSETS_CHECKPOINT)
    assert (offsets.log_start_offset, offsets.recovery_point, offsets.high_watermark) == (0, 5, 4)


def test_os_errors_become_storage_errors(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0", 2)
    log.active.log.close()
    with pytest.raises(KafkaStorageError):
        log.append(batch(b"x"), leader_epoch=0, now_ms=0)


def test_sealed_segments_share_a_bounded_fd_cache(tmp_path: Path) -> None:
    files = FileCache(capacity=4)
    log = Log.open(tmp_path / "t-0", SMALL, files=files)
    for i in range(60):
        log.append(batch(b"v%d" % i), leader_epoch=0, now_ms=0)
    assert len(log.segments) > 8
    assert [bases(log.read(i, 1)) for i in range(60)] == [[i] for i in range(60)]
    assert len(files) <= 4


def test_log_manager(tmp_path: Path) -> None:
    manager = LogManager(tmp_path, SMALL)
    for topic in ("plain", "with-dash", "dots.and-dash-3"):
        manager.get_or_create(topic, 7).append(batch(b"x"), leader_epoch=0, now_ms=0)
    manager.checkpoint_all()
    manager.close_all()
    again = LogManager(tmp_path, SMALL)
    assert sorted(again.open_all()) == [("dots.and-dash-3", 7), ("plain", 7), ("with-dash", 7)]
    assert again.get("with-dash", 7) is not None
    again.delete("with-dash", 7)
    assert not (tmp_path / "with-dash-7").exists()
    (tmp_path / "gone-0.abcd-delete").mkdir()
    assert sorted(again.existing()) == [("dots.and-dash-3", 7), ("plain", 7)]
    assert not (tmp_path / "gone-0.abcd-delete").exists()
    again.close_all()


def test_layout_names() -> None:
    assert layout.segment_name(42) == "00000000000000000042"
    assert layout.parse_segment_name("00000000000000000042.timeindex") == (42, ".timeindex")
    assert layout.parse_segment_name("00000000000000000042.log.deleted") is None
    assert layout.parse_partition_dir("a.b-c-12") == ("a.b-c", 12)
    assert layout.parse_partition_dir("a-b.1234-delete") is None


def test_a_checkpoint_of_an_idle_log_fsyncs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    log = filled(tmp_path / "t-0", n=30)
    log.checkpoint()
    assert synced, "a written log's first checkpoint syncs it"
    synced.clear()
    log.checkpoint()
    log.checkpoint()
    assert synced == []
    log.append(batch(b"more"), leader_epoch=0, now_ms=1000)
    log.checkpoint()
    assert synced
    synced.clear()
    log.truncate_to(log.log_end_offset - 1)
    log.checkpoint()
    assert synced
    log.close()


def test_leader_epochs_are_written_by_the_checkpoint_not_by_the_append(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    path = tmp_path / "t-0" / layout.LEADER_EPOCH_CHECKPOINT
    log.append(batch(b"a"), leader_epoch=3, now_ms=1000)
    assert read_epochs(path) == []
    log.checkpoint()
    assert read_epochs(path) == [(3, 0)]
    log.close()


def test_a_crash_before_the_checkpoint_rebuilds_the_epochs_from_the_batches(
    tmp_path: Path,
) -> None:
    log = Log.open(tmp_path / "t-0", SMALL)
    for _ in range(12):
        log.append(batch(b"x" * 40), leader_epoch=1, now_ms=1000)
    log.checkpoint()
    for i in range(12):
        log.append(batch(b"y" * 40), leader_epoch=2 + i // 6, now_ms=1000)
    assert len(log.segments) > 1
    log.close_uncleanly()
    reopened = Log.open(tmp_path / "t-0", SMALL)
    assert reopened.epochs.entries == [(1, 0), (2, 12), (3, 18)]
    assert reopened.end_offset_for_epoch(2) == (2, 18)
    reopened.close()
