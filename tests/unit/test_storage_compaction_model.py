"""A compacted log against a model, driven by hypothesis: keyed writes, tombstones, a simulated
clock, the high watermark, cleans (whole, or cut short by a crash before or between their
swaps), crashes and reopens.

After every step the log, read from its start, must give strictly increasing offsets, each
record exactly what was written at that offset; the latest record of every key must be the
model's (a tombstone may be missing only once a clean ran ``delete.retention.ms`` or more
after the first clean that covered it, and then the key is gone entirely: never an older
value); nothing at or above the high watermark is ever cleaned away; and the clean section
(below the cleaner's checkpoint) holds each key at most once.

The cleaner's clock is ``now_ms``: the first clean that keeps a tombstone stamps its batch with
a delete horizon ``delete.retention.ms`` later (KIP-534). A clean cut short by a crash counts
too once it committed its swaps, since recovery completes them.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from pafka.records.batch import Codec, iter_batches
from pafka.records.encoding import build_batch
from pafka.storage import clean_pass
from pafka.storage.cleaning import first_dirty_offset
from pafka.storage.files import FileCache
from pafka.storage.log import Log
from tests.unit.compaction_util import cleaner_of, compacted_config, plan_of, read_all

RETENTION_MS = 10_000
CONFIG = compacted_config(
    segment_bytes=250, index_interval_bytes=64, delete_retention_ms=RETENTION_MS
)
PRODUCER_ID = 7
KEYS = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"]

records_strategy = st.lists(
    st.tuples(st.sampled_from(KEYS), st.none() | st.binary(min_size=0, max_size=12)),
    min_size=1,
    max_size=3,
)


class CompactedLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="pafka-compaction-"))
        self.dir = self.root / "t-0"
        self.files = FileCache(8)
        self.log = Log.open(self.dir, CONFIG, files=self.files)
        self.now_ms = int(time.time() * 1000)
        self.written: dict[int, tuple[bytes, bytes | None, int]] = {}
        self.latest: dict[bytes, int] = {}  # key -> offset of its latest record
        self.hw = 0
        self.covered_at: dict[int, int] = {}  # tombstone offset -> the clean that passed it
        self.may_go: set[int] = set()  # tombstones a clean was allowed to remove
        self.sequence = 0  # the idempotent producer's next sequence number
        self.producer_last: tuple[int, int, int] | None = None  # its last batch

    def teardown(self) -> None:
        self.log.close_uncleanly()
        self.files.close_all()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- writing and time ----------------------------------------------------------------------

    @initialize(batches=st.lists(records_strategy, min_size=5, max_size=20))
    def history(self, batches: list[list[tuple[bytes, bytes | None]]]) -> None:
        """A log with a few segments already, so the first cleans have work."""
        self.write(batches, roll_after=True, idempotent=False)
        self.hw = self.log.log_end_offset
        self.log.high_watermark = self.hw

    @rule(
        batches=st.lists(records_strategy, min_size=1, max_size=6),
        roll_after=st.booleans(),
        idempotent=st.booleans(),
        codec=st.sampled_from([c for c in Codec if c is not Codec.UNKNOWN]),
    )
    def write(
        self,
        batches: list[list[tuple[bytes, bytes | None]]],
        roll_after: bool,
        idempotent: bool,
        codec: Codec = Codec.NONE,
    ) -> None:
        """Batches from a plain producer, or from one idempotent producer whose last batch
        (and so its sequence numbers) every clean must keep."""
        for records in batches:
            producer = {}
            if idempotent:
                producer = {"producer_id": PRODUCER_ID, "producer_epoch": 0}
            batch = build_batch(
                [(k, v, []) for k, v in records],
                timestamp_ms=self.now_ms,
                base_sequence=self.sequence if idempotent else -1,
                compression=codec,
                **producer,
            )
            info = self.log.append(batch, leader_epoch=0, now_ms=self.now_ms)
            if idempotent:
                self.producer_last = (info.first_offset, info.last_offset, self.sequence)
                self.sequence += len(records)
            for i, (key, value) in enumerate(records):
                offset = info.first_offset + i
                self.written[offset] = (key, value, self.now_ms)
                self.latest[key] = offset
        if roll_after:
            self.log.roll(self.now_ms)

    @rule(step_ms=st.sampled_from([1, 700, 3_000, 6_000, RETENTION_MS, RETENTION_MS + 1, 30_000]))
    def advance_clock(self, step_ms: int) -> None:
        self.now_ms += step_ms

    @rule(data=st.data())
    def advance_high_watermark(self, data: st.DataObject) -> None:
        end = self.log.log_end_offset
        self.hw = data.draw(st.just(end) | st.integers(self.hw, end))
        self.log.high_watermark = self.hw

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        """DeleteRecords: the log start moves up (whole segments below it go); keys whose
        latest record is below it are gone with it. The start is checkpointed at once: one
        that a crash took back (the broker checkpoints periodically, as Kafka does) would make
        records visible again that a clean meanwhile treated as gone."""
        start = self.log.log_start_offset
        self.log.delete_records_before(data.draw(st.integers(start, max(start, self.hw))))
        self.log.checkpoint()

    # -- cleaning ------------------------------------------------------------------------------

    def _before_clean(self) -> None:
        """A clean at ``now_ms`` may remove the tombstones past their deadline."""
        for offset, covered in self.covered_at.items():
            if self.now_ms - covered >= RETENTION_MS:
                self.may_go.add(offset)

    def _after_clean(self, end_offset: int | None = None) -> None:
        """Tombstones below where the clean reached (its checkpoint, unless given) now have
        their horizon."""
        reached = self._first_dirty() if end_offset is None else end_offset
        for offset, (_, value, _) in self.written.items():
            if value is None and offset < reached and offset not in self.covered_at:
                self.covered_at[offset] = self.now_ms

    def _first_dirty(self) -> int:
        return first_dirty_offset(
            self.log.cleaner_offset, self.log.log_start_offset, self.log.log_end_offset
        )

    @rule()
    def clean(self) -> None:
        self._before_clean()
        asyncio.run(cleaner_of(self.log).clean_once(self.now_ms))
        self._after_clean()

    @rule()
    def full_clean(self) -> None:
        """Everything below the high watermark sealed: one clean covers the whole log."""
        self.log.roll(self.now_ms)
        self.hw = self.log.log_end_offset
        self.log.high_watermark = self.hw
        self._before_clean()
        asyncio.run(cleaner_of(self.log).clean_once(self.now_ms))
        self._after_clean()
        first_dirty = self._first_dirty()
        # A dirty section of no bytes is not cleanable (its dirty ratio is 0, as in Kafka), and
        # stays where it is: after a crash that lost the checkpoint of a clean whose swaps
        # recovery completed, the segments below the active one may all be empty.
        dirty = [s for s in self.log.segments[:-1] if s.base_offset >= first_dirty]
        assert first_dirty == self.log.active.base_offset or all(s.size == 0 for s in dirty)
        self.check_clean_section_holds_each_key_once()
        # An emptied batch stays only while it is its producer's last.
        empty = [h for h in self.log.iter_headers() if h.records_count == 0]
        assert [(h.base_offset, h.last_offset, h.base_sequence) for h in empty] in (
            [],
            [self.producer_last],
        )

    @rule(installed=st.integers(0, 3))
    def crash_in_a_clean(self, installed: int) -> None:
        """The worker committed every group; the loop swapped in only ``installed`` of them
        (none: the broker died before it saw the outcome), then the broker died."""
        planned = plan_of(self.log, self.now_ms)
        if planned is None:
            return
        plan, sealed, _ = planned
        self._before_clean()
        outcome = clean_pass.run(plan)
        cleaner = cleaner_of(self.log)
        for group in outcome.groups[:installed]:
            old = [sealed[base] for base in group.replaced]
            assert self.log.replace_segments(old, cleaner._swapper(self.log, group))
        if outcome.groups:  # committed: recovery completes every swap
            self._after_clean(outcome.end_offset)
        self._reopen(clean=False)

    # -- crashes -------------------------------------------------------------------------------

    def _reopen(self, *, clean: bool) -> None:
        if clean:
            self.log.close()
        else:
            self.log.close_uncleanly()
        self.log = Log.open(self.dir, CONFIG, files=self.files)
        # The high watermark is the replicas' to say; the checkpoint may be behind it.
        self.log.high_watermark = self.hw

    @rule(clean=st.booleans(), forget_descriptors=st.booleans())
    def reopen(self, clean: bool, forget_descriptors: bool) -> None:
        """A crash (no flush, no clean-shutdown marker) or a clean restart."""
        if forget_descriptors:
            self.files.close_all()
        self._reopen(clean=clean)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def reads_equal_the_model(self) -> None:
        records = read_all(self.log)
        offsets = [r.offset for r in records]
        assert all(a < b for a, b in itertools.pairwise(offsets))
        for record in records:
            assert (record.key, record.value, record.timestamp) == self.written[record.offset]
        present = set(offsets)
        assert {o for o in self.written if o >= self.hw} <= present, "cleaned above the hw"
        found: dict[bytes, int] = {}
        for record in records:
            assert record.key is not None
            found[record.key] = record.offset
        start = self.log.log_start_offset
        for key, offset in self.latest.items():
            if offset < start:
                continue  # deleted by DeleteRecords
            if key in found:
                assert found[key] == offset, f"{key!r}: read {found[key]}, latest {offset}"
                continue
            assert self.written[offset][1] is None, f"live key {key!r} lost"
            assert offset in self.may_go, f"tombstone of {key!r} at {offset} went early"

    @invariant()
    def lookups_by_offset_and_time_agree_with_the_read(self) -> None:
        """The indexes of cleaned segments: a sample of records found by offset and by
        timestamp (the clock never goes back, so the first record at or after a time is the
        one a lookup must find)."""
        records = read_all(self.log)
        for record in records[::7]:
            first = next(iter_batches(self.log.read(record.offset, 1)))[1]
            assert first.base_offset <= record.offset <= first.last_offset
        for stamp in sorted({r.timestamp for r in records})[::3]:
            found = self.log.offset_for_timestamp(stamp)
            expected = next(r for r in records if r.timestamp >= stamp)
            assert found is not None
            assert tuple(found) == (expected.timestamp, expected.offset)

    @invariant()
    def producer_state_survives(self) -> None:
        last = None
        for header in self.log.iter_headers():
            if header.producer_id == PRODUCER_ID:
                last = (header.base_offset, header.last_offset, header.base_sequence)
        if self.producer_last is not None and self.producer_last[0] < self.log.log_start_offset:
            return  # below the log start: its segment may be gone
        assert last == self.producer_last

    @invariant()
    def check_clean_section_holds_each_key_once(self) -> None:
        checkpoint = self._first_dirty()
        keys = [r.key for r in read_all(self.log) if r.offset < checkpoint]
        assert len(keys) == len(set(keys))


CompactedLogMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=50, deadline=None
)
TestCompactedLog = CompactedLogMachine.TestCase
