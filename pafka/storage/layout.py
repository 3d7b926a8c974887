"""Where a partition's files live and what they are called (Kafka's on-disk layout).

::

    {data_dir}/
      {topic}-{partition}/                 topics may contain '-' and '.'
        00000000000000000000.log           record batches; the name is the base offset
        00000000000000000000.index         offset index of that segment
        00000000000000000000.timeindex     time index of that segment
        00000000000000000000.txnindex      aborted transactions whose marker the segment holds
        00000000000000000042.snapshot      producer state as of offset 42 (idempotence, open
                                           transactions)
        leader-epoch-checkpoint            epoch → start offset (Kafka's text format)
        partition-offsets-checkpoint       log start offset, recovery point, high watermark
        cleaner-offset-checkpoint          compacted logs: where the dirty section starts
        00000000000000000000.log.cleaned   a clean's new segment, before it is swapped in
        00000000000000000000.swap          a clean's swap manifest: what replaces what
        00000000000000000042.log.deleted   a replaced segment's file, until it is removed
        .kafka_cleanshutdown               present only while the log is closed cleanly
      {topic}-{partition}.{random}-delete/ a partition being deleted

Only this module spells file names.
"""

from __future__ import annotations

import re
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DELETE_DIR_SUFFIX = "-delete"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_OFFSETS_CHECKPOINT = "partition-offsets-checkpoint"
TEMP_SUFFIX = ".tmp"
SEGMENT_NAME_DIGITS = 20

_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
_SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.log$")
_SWAP_FILE = re.compile(r"^(?P<base>\d{20})\.swap$")
_SEGMENT_ANY = re.compile(
    r"^(?P<base>\d{20})\.(?P<kind>log|index|timeindex|txnindex)(?P<extra>\..*)?$"
)
_SNAPSHOT_FILE = re.compile(r"^(?P<base>\d{20})\.snapshot$")
_TXN_INDEX_FILE = re.compile(r"^(?P<base>\d{20})\.txnindex$")


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    return data_dir / f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory name; topics may contain '-'."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match.group("topic"), int(match.group("partition"))


def delete_dir(directory: Path, token: str) -> Path:
    """Where a partition directory is renamed before it is removed."""
    return directory.with_name(f"{directory.name}.{token}{DELETE_DIR_SUFFIX}")


def is_delete_dir(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX)


def segment_name(base_offset: int) -> str:
    if not 0 <= base_offset < 10**SEGMENT_NAME_DIGITS:
        raise ValueError(f"base offset {base_offset} cannot name a segment")
    return f"{base_offset:0{SEGMENT_NAME_DIGITS}d}"


def parse_segment_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) of a segment file name such as ``00000000000000000042.index``."""
    match = _SEGMENT_ANY.match(name)
    if match is None or match.group("extra"):
        return None
    return int(match.group("base")), "." + match.group("kind")


def segment_files(directory: Path, base_offset: int) -> tuple[Path, Path, Path]:
    return (
        log_file(directory, base_offset),
        index_file(directory, base_offset),
        time_index_file(directory, base_offset),
    )


def with_suffix(path: Path, suffix: str) -> Path:
    """``path`` with ``suffix`` appended: ``...42.log`` -> ``...42.log.cleaned``."""
    return path.with_name(path.name + suffix)


def cleaned_files(directory: Path, base_offset: int) -> tuple[Path, Path, Path]:
    """Where a clean writes the segment that will replace the group starting at ``base``."""
    log_, index, time_index = segment_files(directory, base_offset)
    return (
        with_suffix(log_, CLEANED_SUFFIX),
        with_suffix(index, CLEANED_SUFFIX),
        with_suffix(time_index, CLEANED_SUFFIX),
    )


def swap_manifest(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + SWAP_SUFFIX)


def swap_manifests(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if _SWAP_FILE.match(p.name))


def stray_files(directory: Path) -> list[Path]:
    """Leftovers of an interrupted operation: temp files, ``.deleted`` and ``.cleaned`` files
    (once swap manifests were dealt with), and indexes whose ``.log`` is gone."""
    logs = set(segment_base_offsets(directory))
    stray = []
    for path in directory.iterdir():
        if path.name.endswith((TEMP_SUFFIX, DELETED_SUFFIX, CLEANED_SUFFIX)):
            stray.append(path)
            continue
        parsed = parse_segment_name(path.name)
        if parsed is not None and parsed[0] not in logs:
            stray.append(path)
    return stray


def log_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + LOG_SUFFIX)


def index_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + INDEX_SUFFIX)


def time_index_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + TIME_INDEX_SUFFIX)


def segment_base_offsets(directory: Path) -> list[int]:
    return _offsets_named(directory, _SEGMENT_FILE)


def _offsets_named(directory: Path, pattern: re.Pattern[str]) -> list[int]:
    """The offsets (group ``base``) of the file names in ``directory`` ``pattern`` matches."""
    found = []
    for path in directory.iterdir():
        match = pattern.match(path.name)
        if match is not None:
            found.append(int(match.group("base")))
    return sorted(found)


def txn_index_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + TXN_INDEX_SUFFIX)


def txn_index_base_offsets(directory: Path) -> list[int]:
    return _offsets_named(directory, _TXN_INDEX_FILE)


def snapshot_file(directory: Path, offset: int) -> Path:
    return directory / (segment_name(offset) + SNAPSHOT_SUFFIX)


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the producer-state snapshots in ``directory``, oldest first."""
    return _offsets_named(directory, _SNAPSHOT_FILE)
