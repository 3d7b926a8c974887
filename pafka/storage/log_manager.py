"""All partition logs of one broker under one data directory, and their checkpoint files."""

from __future__ import annotations

import logging
import os
import resource
import shutil
from pathlib import Path

from pafka.errors import KafkaStorageError
from pafka.storage import layout
from pafka.storage.checkpoints import read_offsets, write_offsets
from pafka.storage.config import LogConfig
from pafka.storage.log import Log

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def raise_open_files_limit() -> None:
    """Every segment keeps three files open; take the hard limit, as Kafka's docs advise."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class LogManager:
    def __init__(self, data_dir: Path, default_config: LogConfig) -> None:
        self.data_dir = data_dir
        self.default_config = default_config
        self.logs: dict[TopicPartition, Log] = {}
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KafkaStorageError(f"cannot create data dir {data_dir}: {exc}") from exc
        raise_open_files_limit()
        self._high_watermarks = read_offsets(data_dir / layout.HIGH_WATERMARK_CHECKPOINT)
        self._recovery_points = read_offsets(data_dir / layout.RECOVERY_POINT_CHECKPOINT)
        self._log_starts = read_offsets(data_dir / layout.LOG_START_CHECKPOINT)

    def existing(self) -> list[TopicPartition]:
        """Partition directories on disk; half-deleted ones are finished off."""
        found = []
        for path in sorted(self.data_dir.iterdir()):
            if not path.is_dir():
                continue
            if path.name.endswith(layout.DELETE_DIR_SUFFIX):
                shutil.rmtree(path, ignore_errors=True)
                continue
            parsed = layout.parse_partition_dir(path.name)
            if parsed is not None:
                found.append(parsed)
        return found

    def get(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        key = (topic, partition)
        existing = self.logs.get(key)
        if existing is not None:
            return existing
        try:
            opened = Log.open(
                layout.partition_dir(self.data_dir, topic, partition),
                config or self.default_config,
                log_start_offset=self._log_starts.get(key, 0),
                recovery_point=self._recovery_points.get(key, 0),
                high_watermark=self._high_watermarks.get(key, 0),
            )
        except OSError as exc:
            raise KafkaStorageError(f"cannot open log {topic}-{partition}: {exc}") from exc
        self.logs[key] = opened
        return opened

    def delete(self, topic: str, partition: int) -> None:
        """Remove a partition's data: rename first, so a crash mid-way still ends deleted."""
        key = (topic, partition)
        opened = self.logs.pop(key, None)
        directory = layout.partition_dir(self.data_dir, topic, partition)
        if opened is not None:
            for segment in opened.segments:
                segment.close()
        for table in (self._high_watermarks, self._recovery_points, self._log_starts):
            table.pop(key, None)
        if directory.exists():
            doomed = directory.with_name(
                directory.name + "." + os.urandom(4).hex() + layout.DELETE_DIR_SUFFIX
            )
            directory.rename(doomed)
            shutil.rmtree(doomed, ignore_errors=True)

    def checkpoint_all(self) -> None:
        try:
            for key, opened in list(self.logs.items()):
                opened.flush()
                self._recovery_points[key] = opened.recovery_point
                self._high_watermarks[key] = opened.high_watermark
                self._log_starts[key] = opened.log_start_offset
            write_offsets(self.data_dir / layout.RECOVERY_POINT_CHECKPOINT, self._recovery_points)
            write_offsets(self.data_dir / layout.HIGH_WATERMARK_CHECKPOINT, self._high_watermarks)
            write_offsets(self.data_dir / layout.LOG_START_CHECKPOINT, self._log_starts)
        except OSError as exc:
            raise KafkaStorageError(f"checkpoint failed: {exc}") from exc

    def retention_all(self, now_ms: int) -> int:
        deleted = 0
        for key, opened in list(self.logs.items()):
            n = opened.apply_retention(now_ms)
            if n:
                log.info("retention deleted %d segment(s) of %s-%d", n, *key)
            deleted += n
        return deleted

    def close_all(self) -> None:
        self.checkpoint_all()
        for opened in self.logs.values():
            opened.close()
        self.logs.clear()
