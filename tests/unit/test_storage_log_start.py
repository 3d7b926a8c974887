"""The log start offset as DeleteRecords and a lagging follower move it: whole segments below
it deleted, the rest unreadable, kept across a reopen; and a follower's log restarted empty
at its leader's start."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.errors import OffsetOutOfRangeError
from pafka.records.batch import assign_offsets
from pafka.storage.log import Log
from tests.unit.test_storage_log import SMALL, bases, batch, filled


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 30))
def test_delete_records_keeps_what_is_at_or_above_the_new_start(
    tmp_path_factory: pytest.TempPathFactory, offset: int
) -> None:
    path = tmp_path_factory.mktemp("log") / "t-0"
    log = filled(path)
    assert log.delete_records_before(offset) == offset
    assert log.log_start_offset == offset
    assert all(s.next_offset > offset for s in log.segments[:-1])  # no whole segment below
    if offset < 30:
        assert bases(log.read(offset, 10_000))[0] <= offset
    if offset > 0:
        with pytest.raises(OffsetOutOfRangeError):
            log.read(offset - 1, 10_000)
    log.close()
    reopened = Log.open(path, SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (offset, 30)
    reopened.close()


def test_delete_records_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = filled(tmp_path / "t-0")
    log.high_watermark = 12
    assert log.delete_records_before(20) == 12
    log.close()


def test_a_follower_log_restarts_empty_at_the_leaders_start(tmp_path: Path) -> None:
    path = tmp_path / "t-0"
    log = filled(path, n=5)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (50, 50, 50)
    assert log.epochs.latest_epoch < 0
    log.append_as_follower(assign_offsets(batch(b"a", b"b"), 50, leader_epoch=3), now_ms=0)
    assert log.log_end_offset == 52
    log.high_watermark = 52
    assert bases(log.read(50, 10_000)) == [50]
    log.close()
    reopened = Log.open(path, SMALL)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (50, 52)
    assert [s.base_offset for s in reopened.segments] == [50]
    reopened.close()
