"""The segmented log against a plain list, driven by hypothesis.

The machine appends, reads, rolls (tiny segments), truncates, damages the tail, crashes (no
clean close) and reopens, closes cleanly, and applies retention. After each step the log must
hold exactly the model's batches, in order, with the model's offsets.

Index descriptors come and go: the log borrows them from a file cache of four, which the machine
also empties outright, and the active segment's index entries move from memory to the files
(spill) at any step; lookups by offset and by timestamp must not notice, and the descriptors
open into the log's directory stay bounded.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pafka.errors import OffsetOutOfRangeError
from pafka.records.batch import iter_batches
from pafka.storage.config import LogConfig
from pafka.storage.files import FileCache
from pafka.storage.log import Log
from tests.unit.fds_util import open_fds_under
from tests.unit.records_util import build_batch

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=64, retention_ms=-1)
CACHED_FILES = 4


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="pafka-model-"))
        self.dir = self.root / "topic-0"
        self.files = FileCache(CACHED_FILES)
        self.log = Log.open(self.dir, CONFIG, files=self.files)
        # The model: (base_offset, values) per batch, and the log start offset.
        self.batches: list[tuple[int, list[bytes]]] = []
        self.timestamps: dict[int, int] = {}  # base offset -> the batch's records' timestamp
        self.start = 0
        self.epoch = 0

    def teardown(self) -> None:
        self.log.close_uncleanly()
        self.files.close_all()
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def end(self) -> int:
        if not self.batches:
            return self.start
        base, values = self.batches[-1]
        return base + len(values)

    @rule(
        values=st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=5),
        timestamp=st.integers(min_value=1000, max_value=1050),
    )
    def append(self, values: list[bytes], timestamp: int) -> None:
        info = self.log.append(
            build_batch(values, timestamp_ms=timestamp),
            leader_epoch=self.epoch,
            now_ms=int(time.time() * 1000),
        )
        assert info.first_offset == self.end
        self.batches.append((info.first_offset, values))
        self.timestamps[info.first_offset] = timestamp
        self.log.high_watermark = self.log.log_end_offset

    @rule(timestamp=st.integers(min_value=990, max_value=1060))
    def find_by_timestamp(self, timestamp: int) -> None:
        found = self.log.offset_for_timestamp(timestamp)
        expected = next(
            (
                (self.timestamps[b], b)
                for b, _ in self.batches
                if b >= self.start and self.timestamps[b] >= timestamp
            ),
            None,
        )
        assert (None if found is None else tuple(found)) == expected

    @rule()
    def close_cached_descriptors(self) -> None:
        self.files.close_all()

    @rule()
    def spill_active_indexes(self) -> None:
        self.log.active.spill_indexes()

    @rule()
    def bump_epoch(self) -> None:
        self.epoch += 1

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(min_value=self.start, max_value=self.end))
        max_bytes = data.draw(st.integers(min_value=1, max_value=600))
        raw = self.log.read(offset, max_bytes)
        got = [h.base_offset for _, h in iter_batches(raw)]
        expected = [b for b, v in self.batches if b + len(v) > offset]
        if expected:
            assert got, "a read with data available returns at least one batch"
            assert got == expected[: len(got)]
            assert len(got) == 1 or len(raw) <= max_bytes
        else:
            assert got == []

    @rule(data=st.data())
    def read_out_of_range(self, data: st.DataObject) -> None:
        offset = data.draw(st.sampled_from([self.start - 1, self.end + 1]))
        if offset < 0:
            return
        with pytest.raises(OffsetOutOfRangeError):
            self.log.read(offset, 100)

    @precondition(lambda self: len(self.batches) > 0)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(min_value=0, max_value=len(self.batches) - 1))
        base, _ = self.batches[index]
        if base < self.start:
            return
        self.log.truncate_to(base)
        self.batches = self.batches[:index]

    @precondition(lambda self: len(self.batches) > 0)
    @rule(garbage=st.binary(min_size=1, max_size=80))
    def crash_with_torn_tail(self, garbage: bytes) -> None:
        """A crash mid-write: junk after the last batch, no clean shutdown marker."""
        path = self.log.active.log_path
        self.log.active.flush()
        with open(path, "ab") as f:
            f.write(garbage)
        self._reopen(clean=False)

    @precondition(lambda self: len(self.batches) > 0)
    @rule(data=st.data())
    def crash_with_corrupt_last_batch(self, data: st.DataObject) -> None:
        base, _values = self.batches[-1]
        if base < self.log.active.base_offset:
            return
        size = self.log.active.size
        raw_last = self.log.read(base, 1 << 20)
        position = (
            size - len(raw_last) + data.draw(st.integers(min_value=21, max_value=len(raw_last) - 1))
        )
        with open(self.log.active.log_path, "r+b") as f:
            f.seek(position)
            byte = f.read(1)
            f.seek(position)
            f.write(bytes([byte[0] ^ 0xFF]))
        self._reopen(clean=False)
        self.batches.pop()

    @rule()
    def clean_restart(self) -> None:
        self._reopen(clean=True)

    @rule()
    def roll(self) -> None:
        if self.log.active.size:
            self.log.roll()

    @rule()
    def retention_by_size(self) -> None:
        self.log.config = LogConfig(
            segment_bytes=CONFIG.segment_bytes,
            index_interval_bytes=CONFIG.index_interval_bytes,
            retention_ms=-1,
            retention_bytes=800,
        )
        self.log.apply_retention(int(time.time() * 1000))
        self.log.config = CONFIG
        self.start = self.log.log_start_offset
        self.batches = [(b, v) for b, v in self.batches if b >= self.start]

    @rule(data=st.data())
    def read_below_high_watermark(self, data: st.DataObject) -> None:
        hw = data.draw(st.integers(min_value=self.start, max_value=self.end))
        self.log.high_watermark = hw
        offset = data.draw(st.integers(min_value=self.start, max_value=self.end))
        raw = self.log.read(offset, data.draw(st.integers(1, 600)), max_offset=hw)
        got = [h.base_offset for _, h in iter_batches(raw)]
        assert all(base < hw for base in got)
        expected = [b for b, v in self.batches if b + len(v) > offset and b < hw]
        assert got == expected[: len(got)]
        assert bool(got) == bool(expected)
        self.log.high_watermark = self.log.log_end_offset

    @rule(data=st.data())
    def lose_an_index_and_crash(self, data: st.DataObject) -> None:
        indexes = sorted(self.dir.glob("*.index")) + sorted(self.dir.glob("*.timeindex"))
        victim = data.draw(st.sampled_from(indexes))
        self.log.close_uncleanly()
        if data.draw(st.booleans()):
            victim.unlink()
        else:
            with open(victim, "ab") as f:
                f.write(b"\x01\x02\x03")
        self.log = Log.open(
            self.dir, CONFIG, clean_shutdown_known=data.draw(st.booleans()), files=self.files
        )

    def _reopen(self, *, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.close_uncleanly()
        self.log = Log.open(self.dir, CONFIG, files=self.files)

    @invariant()
    def matches_model(self) -> None:
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start
        got: list[tuple[int, int]] = []
        offset = self.start
        while offset < self.end:
            headers = [h for _, h in iter_batches(self.log.read(offset, 1 << 24))]
            assert headers, f"no data at {offset} below the end {self.end}"
            got += [(h.base_offset, h.records_count) for h in headers]
            offset = headers[-1].next_offset
        assert got == [(b, len(v)) for b, v in self.batches if b >= self.start]
        assert self.log._bases == [s.base_offset for s in self.log.segments]

    @invariant()
    def descriptors_bounded(self) -> None:
        # The active log, the cache, and rolled segments' files waiting for the next fsync.
        held = open_fds_under(self.root)
        assert sum(held.values()) <= 1 + CACHED_FILES + len(self.log._unflushed), held


TestLogModel = LogMachine.TestCase
TestLogModel.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
