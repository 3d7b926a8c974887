"""Incremental writeback: each step of a log's appends goes to the kernel, on real files."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import ConfigError
from pafka.records.batch import iter_batches
from pafka.records.encoding import build_batch, decode_records
from pafka.storage import layout
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.log_manager import LogManager
from pafka.storage.writeback import (
    MAX_PENDING,
    SYNC_FILE_RANGE_WRITE,
    Writeback,
    kernel_sync_file_range,
)
from services.broker.settings import BrokerSettings

STEP = 8 * 1024
CONFIG = LogConfig(segment_bytes=64 * 1024, retention_ms=-1)

pytestmark = pytest.mark.skipif(
    kernel_sync_file_range() is None, reason="no sync_file_range here (not Linux)"
)


class Recorder:
    """The kernel's call, with each request's file (inode), range and result noted."""

    def __init__(self) -> None:
        self.kernel = kernel_sync_file_range()
        self.calls: list[tuple[int, int, int, int]] = []

    def __call__(self, fd: int, offset: int, length: int, flags: int) -> int:
        assert flags == SYNC_FILE_RANGE_WRITE
        assert self.kernel is not None
        result = self.kernel(fd, offset, length, flags)
        self.calls.append((os.fstat(fd).st_ino, offset, length, result))
        return result


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def value(i: int, size: int) -> bytes:
    return (b"%08d" % i) * (size // 8)


def append(log: Log, count: int, size: int) -> None:
    """``count`` batches of one record of about ``size`` bytes each."""
    for i in range(count):
        log.append(build_batch([(None, value(i, size), [])]), leader_epoch=0, now_ms=0)


def values(log: Log) -> list[bytes | None]:
    """Every record value of ``log``, read back from its files."""
    found: list[bytes | None] = []
    offset = 0
    while offset < log.log_end_offset:
        raw = bytes(log.read(offset, 1 << 30))
        for pos, header in iter_batches(raw):
            found += [r.value for r in decode_records(raw[pos : pos + header.size])]
            offset = header.next_offset
    return found


def segment_inodes(directory: Path) -> dict[int, int]:
    """Inode -> size of each segment file of the log in ``directory``."""
    return {
        (stat := path.stat()).st_ino: stat.st_size
        for path in directory.glob("*" + layout.LOG_SUFFIX)
    }


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[tuple[LogManager, Recorder]]:
    recorder = Recorder()
    logs = LogManager(tmp_path, CONFIG, writeback_bytes=STEP)
    logs.writeback = Writeback(STEP, recorder)
    yield logs, recorder
    logs.close_all()


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(min_value=16, max_value=3000), min_size=1, max_size=60))
def test_each_segment_is_written_back_in_contiguous_steps_from_its_start(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("wb")
    recorder = Recorder()
    step = 2048
    logs = LogManager(directory, LogConfig(segment_bytes=16 * 1024), writeback_bytes=step)
    logs.writeback = Writeback(step, recorder)
    log = logs.get_or_create("t", 0)
    sent = [value(i, size) for i, size in enumerate(sizes)]
    for payload in sent:
        log.append(build_batch([(None, payload, [])]), leader_epoch=0, now_ms=0)
    logs.writeback.close()  # every request made is done
    files = segment_inodes(log.directory)
    ends: dict[int, int] = {}
    for inode, offset, length, result in recorder.calls:
        assert result == 0
        assert inode in files  # a segment file of this log, rolled or active
        assert offset == ends.get(inode, 0)  # picks up where the last step ended
        assert length >= step
        ends[inode] = offset + length
        assert ends[inode] <= files[inode]
    # What is left of each segment is less than a step.
    for inode, size in files.items():
        assert size - ends.get(inode, 0) < step
    assert values(log) == sent
    logs.close_all()


def test_a_step_goes_out_as_soon_as_it_is_full_and_not_before(
    manager: tuple[LogManager, Recorder],
) -> None:
    logs, recorder = manager
    log = logs.get_or_create("t", 0)
    append(log, 1, STEP // 2)
    logs.writeback.close()
    assert recorder.calls == []
    append(log, 1, STEP // 2)
    logs.writeback.close()
    size = log.active.size
    assert [(offset, length) for _, offset, length, _ in recorder.calls] == [(0, size)]


def test_a_new_segment_is_written_back_from_its_own_start(
    manager: tuple[LogManager, Recorder],
) -> None:
    logs, recorder = manager
    log = logs.get_or_create("t", 0)
    append(log, 40, 3000)
    logs.writeback.close()
    firsts = [recorder.calls[0][1]] + [
        offset for (before, *_), (inode, offset, *_) in pairwise(recorder.calls) if inode != before
    ]
    assert len(log.segments) == len(firsts) > 1
    assert firsts == [0] * len(firsts)


def test_a_truncated_log_starts_its_steps_again_from_its_new_end(
    manager: tuple[LogManager, Recorder],
) -> None:
    logs, recorder = manager
    log = logs.get_or_create("t", 0)
    append(log, 3, STEP)
    log.truncate_to(1)
    cut = log.active.size
    append(log, 3, STEP)
    logs.writeback.close()
    after_cut = [(offset, length) for _, offset, length, _ in recorder.calls if offset >= cut]
    assert after_cut and after_cut[0][0] == cut


def test_requests_hold_no_descriptor_once_done(tmp_path: Path) -> None:
    """Rolls keep descriptors of their own (to fsync, and the sealed segments' cache): the same
    appends with writeback off are the measure."""
    opened = {}
    for step in (STEP, 0):
        recorder = Recorder()
        logs = LogManager(tmp_path / str(step), CONFIG, writeback_bytes=step)
        logs.writeback = Writeback(step, recorder)
        log = logs.get_or_create("t", 0)
        before = open_fds()
        append(log, 40, 3000)  # several rolls, a step every few appends
        logs.writeback.close()
        opened[step] = open_fds() - before
        assert len(log.segments) > 1
        assert (len(recorder.calls) >= 10) == (step > 0)
        logs.close_all()
    assert opened[STEP] == opened[0]


def test_a_slow_disk_puts_steps_off_instead_of_holding_descriptors(tmp_path: Path) -> None:
    release = threading.Event()
    requested: list[tuple[int, int]] = []

    def stuck(fd: int, offset: int, length: int, flags: int) -> int:
        requested.append((offset, length))
        release.wait(10)
        return 0

    logs = LogManager(tmp_path, LogConfig(retention_ms=-1), writeback_bytes=STEP)
    logs.writeback = Writeback(STEP, stuck)
    log = logs.get_or_create("t", 0)
    before = open_fds()
    append(log, MAX_PENDING + 40, STEP)
    # One request in the call, at most MAX_PENDING waiting: each holds one descriptor.
    assert open_fds() - before == MAX_PENDING + 1
    release.set()
    logs.writeback.close()
    assert open_fds() == before
    log.append(build_batch([(None, value(0, STEP), [])]), leader_epoch=0, now_ms=0)
    logs.writeback.close()
    # Nothing was skipped: what was put off went out with the next step, from where the last
    # one ended, up to the end of the file.
    ends = [offset + length for offset, length in requested]
    assert [offset for offset, _ in requested] == [0, *ends[:-1]]
    assert ends[-1] == log.active.size
    assert max(length for _, length in requested) > 40 * STEP
    logs.close_all()


def test_off_with_zero_bytes_makes_no_request_and_no_thread(tmp_path: Path) -> None:
    calls: list[int] = []

    def record(fd: int, offset: int, length: int, flags: int) -> int:
        calls.append(offset)
        return 0

    logs = LogManager(tmp_path, CONFIG, writeback_bytes=0)
    logs.writeback = Writeback(0, record)
    log = logs.get_or_create("t", 0)
    append(log, 20, STEP)
    assert not logs.writeback.enabled
    assert calls == []
    logs.close_all()


def test_a_failing_call_is_logged_once_and_changes_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = LogManager(tmp_path, CONFIG, writeback_bytes=STEP)
    logs.writeback = Writeback(STEP, lambda fd, offset, length, flags: -1)
    log = logs.get_or_create("t", 0)
    sent = [value(i, STEP) for i in range(6)]
    for payload in sent:
        log.append(build_batch([(None, payload, [])]), leader_epoch=0, now_ms=0)
    logs.writeback.close()
    warnings = [r for r in caplog.records if "writeback failed" in r.getMessage()]
    assert len(warnings) == 1
    log.flush()
    assert values(log) == sent
    logs.close_all()


def test_the_broker_setting() -> None:
    assert BrokerSettings.from_env({"PAFKA_BROKER_ID": "1"}).log_writeback_bytes == 1024 * 1024
    settings_ = BrokerSettings.from_env(
        {"PAFKA_BROKER_ID": "1", "PAFKA_BROKER_LOG_WRITEBACK_BYTES": "0"}
    )
    assert settings_.log_writeback_bytes == 0
    with pytest.raises(ConfigError, match="LOG_WRITEBACK_BYTES"):
        BrokerSettings.from_env({"PAFKA_BROKER_ID": "1", "PAFKA_BROKER_LOG_WRITEBACK_BYTES": "-1"})


def test_no_descriptor_to_spare_puts_the_step_off_and_the_append_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    logs = LogManager(tmp_path, CONFIG, writeback_bytes=STEP)
    logs.writeback = Writeback(STEP, recorder)
    log = logs.get_or_create("t", 0)

    def out_of_descriptors(fd: int) -> int:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    with monkeypatch.context() as patched:
        patched.setattr(os, "dup", out_of_descriptors)
        append(log, 2, STEP)  # no error: the appends stand
    logs.writeback.close()
    assert recorder.calls == []
    append(log, 1, STEP)  # the step put off goes out with the next
    logs.writeback.close()
    assert [(offset, length) for _, offset, length, _ in recorder.calls] == [(0, log.active.size)]
    assert len(values(log)) == 3
    logs.close_all()


def test_a_reopened_segment_is_written_back_from_where_it_ended(tmp_path: Path) -> None:
    """What the file held at open is on disk already: the steps start after it."""
    first = LogManager(tmp_path, CONFIG, writeback_bytes=0)
    append(first.get_or_create("t", 0), 3, STEP // 2)
    first.close_all()
    recorder = Recorder()
    logs = LogManager(tmp_path, CONFIG, writeback_bytes=STEP)
    logs.writeback = Writeback(STEP, recorder)
    log = logs.get_or_create("t", 0)
    opened_at = log.active.size
    append(log, 2, STEP // 2)
    logs.writeback.close()
    assert [(offset, length) for _, offset, length, _ in recorder.calls] == [
        (opened_at, log.active.size - opened_at)
    ]
    logs.close_all()
