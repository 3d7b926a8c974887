"""Where a partition's files live and what they are called (Kafka's on-disk layout).

``{data_dir}/{topic}-{partition}/{base_offset:020d}.log|.index|.timeindex`` per segment, a
``leader-epoch-checkpoint`` per partition, and log-dir-wide checkpoint files for high
watermarks, recovery points and log start offsets. Only this module spells file names.
"""

from __future__ import annotations

import re
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
DELETE_DIR_SUFFIX = "-delete"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"

_PARTITION_DIR = re.compile(r"^(?P<topic>[a-zA-Z0-9._-]+)-(?P<partition>\d+)$")
_SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.log$")


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    return data_dir / f"{topic}-{partition}"


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory name; topics may contain '-'."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match.group("topic"), int(match.group("partition"))


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


def log_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + LOG_SUFFIX)


def index_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + INDEX_SUFFIX)


def time_index_file(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + TIME_INDEX_SUFFIX)


def segment_base_offsets(directory: Path) -> list[int]:
    found = []
    for path in directory.iterdir():
        match = _SEGMENT_FILE.match(path.name)
        if match is not None:
            found.append(int(match.group("base")))
    return sorted(found)
