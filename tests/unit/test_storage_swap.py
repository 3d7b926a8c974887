"""A clean's swap interrupted at every step, then the log opened again: it reads the old
segments or the new one, never a mix, never a gap, with working indexes and no leftovers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pafka.records.encoding import Record
from pafka.storage import clean_pass, layout, swap
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from tests.unit.compaction_util import (
    check_consistent,
    clean,
    compacted_config,
    leftovers,
    plan_of,
    read_all,
    write,
)

START_MS = 1_700_000_000_000
CONFIG = compacted_config()
KEYS = [b"a", b"b", b"c", b"d"]


def build_log(directory: Path, config: LogConfig = CONFIG, segments: int = 4) -> Log:
    """``segments`` sealed segments of keyed updates (a tombstone among them), rolled by hand
    so they all fit one group, then an active segment; everything below the high watermark."""
    log = Log.open(directory, config)
    now = START_MS
    for s in range(segments):
        for i in range(6):
            key = KEYS[(s * 6 + i) % len(KEYS)]
            value = None if (s, i) == (1, 2) else f"{key.decode()}{s}.{i}".encode()
            write(log, key, value, now)
            now += 1
        log.roll(now)
    write(log, b"a", b"active", now)
    log.high_watermark = log.log_end_offset
    log.checkpoint()
    return log


def expected_after_clean(directory: Path, now_ms: int) -> list[Record]:
    """What the log reads once this clean is done, from a clean of a copy of it."""
    copy = directory.with_name(directory.name.replace("-0", "-9"))
    shutil.copytree(directory, copy)
    log = Log.open(copy, CONFIG)
    assert clean(log, now_ms) is not None
    records = read_all(log)
    log.close_uncleanly()
    shutil.rmtree(copy)
    return records


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "t-0"


def committed(directory: Path) -> tuple[Log, list[Record], list[Record], swap.SwapManifest]:
    """A log whose clean has written its new segment and committed the manifest, nothing else;
    the records it read before, what it reads once cleaned, and the manifest."""
    log = build_log(directory)
    now = START_MS + 10_000
    old = read_all(log)
    new = expected_after_clean(directory, now)
    assert len(new) < len(old)
    planned = plan_of(log, now)
    assert planned is not None
    outcome = clean_pass.run(planned[0])
    (group,) = outcome.groups
    assert len(group.replaced) == 4
    assert layout.swap_manifest(directory, group.base_offset).exists()
    return log, old, new, group.manifest


def crash_and_reopen(log: Log) -> Log:
    log.close_uncleanly()
    return Log.open(log.directory, CONFIG)


def renames(directory: Path, manifest: swap.SwapManifest) -> list[tuple[Path, Path]]:
    """The renames of :func:`swap.apply`, in its order, for doing them one at a time."""
    steps = []
    for base in manifest.replaced:
        for path in layout.segment_files(directory, base):
            steps.append((path, layout.with_suffix(path, layout.DELETED_SUFFIX)))
    cleaned = layout.cleaned_files(directory, manifest.base_offset)
    finals = layout.segment_files(directory, manifest.base_offset)
    steps.extend(zip(cleaned, finals, strict=True))
    return steps


def test_a_clean_swapped_in_reads_as_the_copy_did(directory: Path) -> None:
    log = build_log(directory)
    new = expected_after_clean(directory, START_MS + 10_000)
    assert clean(log, START_MS + 10_000) is not None
    check_consistent(log, new)
    check_consistent(crash_and_reopen(log), new)


def test_crash_before_the_manifest_keeps_the_old_segments(directory: Path) -> None:
    log, old, _, manifest = committed(directory)
    layout.swap_manifest(directory, manifest.base_offset).unlink()  # not yet committed
    assert any(name.endswith(".cleaned") for name in leftovers(directory))
    check_consistent(crash_and_reopen(log), old)


def test_crash_after_the_manifest_completes_the_swap(directory: Path) -> None:
    log, _, new, _ = committed(directory)
    check_consistent(crash_and_reopen(log), new)


@pytest.mark.parametrize("done", range(4 * 3 + 3 + 1))
def test_crash_after_each_rename_completes_the_swap(directory: Path, done: int) -> None:
    log, _, new, manifest = committed(directory)
    log.close_uncleanly()
    for source, target in renames(directory, manifest)[:done]:
        os.replace(source, target)
    check_consistent(Log.open(directory, CONFIG), new)


@pytest.mark.parametrize("removed", [0, 1, 6, 12])
def test_crash_during_finish_completes_the_swap(directory: Path, removed: int) -> None:
    log, _, new, manifest = committed(directory)
    log.close_uncleanly()
    swap.apply(directory, manifest)
    deleted = sorted(directory.glob("*.deleted"))
    assert len(deleted) == 12
    for path in deleted[:removed]:
        path.unlink()
    check_consistent(Log.open(directory, CONFIG), new)


def test_crash_after_finish_removed_the_old_files_but_not_the_manifest(directory: Path) -> None:
    log, _, new, manifest = committed(directory)
    log.close_uncleanly()
    swap.apply(directory, manifest)
    for path in directory.glob("*.deleted"):
        path.unlink()
    assert layout.swap_manifest(directory, manifest.base_offset).exists()
    check_consistent(Log.open(directory, CONFIG), new)


def test_a_replaced_segment_removed_after_the_clean_abandons_it(directory: Path) -> None:
    """Retention (or DeleteRecords) took the first segment after the clean read it."""
    log, old, _, manifest = committed(directory)
    first = min(manifest.replaced)
    first_end = log.segments[1].base_offset
    log.close_uncleanly()
    for path in layout.segment_files(directory, first):
        path.unlink()
    reopened = Log.open(directory, CONFIG)
    check_consistent(reopened, [r for r in old if r.offset >= first_end])


def test_a_replaced_segment_truncated_after_the_clean_abandons_it(directory: Path) -> None:
    """A follower truncated its log into the group after the clean read it."""
    log, old, _, manifest = committed(directory)
    last = max(manifest.replaced)
    log.truncate_to(last + 2)
    log.flush()
    log.close_uncleanly()
    reopened = Log.open(directory, CONFIG)
    check_consistent(reopened, [r for r in old if r.offset < last + 2])


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_text("{not json"),
        lambda path: path.write_text('{"version": 99}'),
        lambda path: path.write_text(
            '{"version": 1, "base_offset": 0, "cleaned": [], "replaced": {}}'
        ),
        lambda path: path.write_bytes(b""),
    ],
    ids=["garbage", "unknown-version", "no-files", "empty"],
)
def test_a_damaged_manifest_abandons_the_clean(
    directory: Path, damage: Callable[[Path], object]
) -> None:
    log, old, _, manifest = committed(directory)
    damage(layout.swap_manifest(directory, manifest.base_offset))
    check_consistent(crash_and_reopen(log), old)


def test_a_clean_interrupted_twice_still_completes(directory: Path) -> None:
    """Recovery itself interrupted after some renames: the next opening finishes the job."""
    log, _, new, manifest = committed(directory)
    log.close_uncleanly()
    for source, target in renames(directory, manifest)[:5]:
        os.replace(source, target)
    # A recovery that got as far as apply, then crashed before finish.
    swap.apply(directory, manifest)
    check_consistent(Log.open(directory, CONFIG), new)


def test_the_cleaner_checkpoint_survives_a_clean_restart(directory: Path) -> None:
    log = build_log(directory)
    outcome = clean(log, START_MS + 10_000)
    assert outcome is not None
    assert log.cleaner_offset == outcome.end_offset == log.active.base_offset
    log.close()
    reopened = Log.open(directory, CONFIG)
    assert reopened.cleaner_offset == outcome.end_offset
    assert clean(reopened, START_MS + 10_001) is None  # nothing dirty any more


@pytest.mark.parametrize("done", [1, 5, 12])
def test_a_damaged_manifest_after_old_files_moved_puts_them_back(
    directory: Path, done: int
) -> None:
    log, old, _, manifest = committed(directory)
    log.close_uncleanly()
    for source, target in renames(directory, manifest)[:done]:
        os.replace(source, target)
    layout.swap_manifest(directory, manifest.base_offset).write_text("{not json")
    check_consistent(Log.open(directory, CONFIG), old)


@pytest.mark.parametrize("done", [13, 14, 15])
def test_a_damaged_manifest_after_new_files_moved_keeps_them(directory: Path, done: int) -> None:
    log, _, new, manifest = committed(directory)
    log.close_uncleanly()
    for source, target in renames(directory, manifest)[:done]:
        os.replace(source, target)
    layout.swap_manifest(directory, manifest.base_offset).write_text("{not json")
    check_consistent(Log.open(directory, CONFIG), new)
