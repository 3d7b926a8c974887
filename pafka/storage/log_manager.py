"""All partition logs of one broker under one data directory.

Logs open lazily (:meth:`LogManager.get_or_create`) or all at once at start-up
(:meth:`LogManager.open_all`); sealed segments of every log borrow descriptors from one shared
:class:`~pafka.storage.files.FileCache`, so open files stay bounded however many partitions
and segments the broker holds. Deleting a partition renames its directory first
(``{topic}-{partition}.{token}-delete``), so a crash half-way still ends deleted: leftovers are
removed by :meth:`LogManager.existing`.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from pafka.errors import KafkaStorageError
from pafka.storage import layout
from pafka.storage.config import LogConfig
from pafka.storage.files import DEFAULT_OPEN_FILES, FileCache
from pafka.storage.log import Log
from pafka.storage.writeback import DEFAULT_STEP_BYTES, Writeback

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class LogManager:
    def __init__(
        self,
        data_dir: Path,
        default_config: LogConfig,
        *,
        open_files: int = DEFAULT_OPEN_FILES,
        writeback_bytes: int = DEFAULT_STEP_BYTES,
    ) -> None:
        self.data_dir = data_dir
        self.default_config = default_config
        self.logs: dict[TopicPartition, Log] = {}
        self.files = FileCache(open_files)
        self.writeback = Writeback(writeback_bytes)
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KafkaStorageError(f"cannot create data dir {data_dir}: {exc}") from exc

    def existing(self) -> list[TopicPartition]:
        """Partition directories on disk; half-deleted ones are finished off."""
        found = []
        try:
            for path in sorted(self.data_dir.iterdir()):
                if not path.is_dir():
                    continue
                if layout.is_delete_dir(path.name):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                parsed = layout.parse_partition_dir(path.name)
                if parsed is not None:
                    found.append(parsed)
        except OSError as exc:
            raise KafkaStorageError(f"cannot list {self.data_dir}: {exc}") from exc
        return found

    def open_all(self, configs: dict[str, LogConfig] | None = None) -> list[TopicPartition]:
        """Open (and recover) every partition found on disk; returns them."""
        found = self.existing()
        for topic, partition in found:
            self.get_or_create(topic, partition, (configs or {}).get(topic))
        return found

    def get(self, topic: str, partition: int) -> Log | None:
        return self.logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Log:
        """The open log of a partition, opened (and recovered) or created on first use. A given
        ``config`` replaces the log's current one."""
        key = (topic, partition)
        existing = self.logs.get(key)
        if existing is not None:
            if config is not None:
                existing.config = config
            return existing
        opened = Log.open(
            layout.partition_dir(self.data_dir, topic, partition),
            config or self.default_config,
            files=self.files,
        )
        opened.writeback = self.writeback
        self.logs[key] = opened
        return opened

    def delete(self, topic: str, partition: int) -> None:
        """Remove a partition's data: rename first, then remove the renamed directory."""
        opened = self.logs.pop((topic, partition), None)
        if opened is not None:
            opened.close_uncleanly()
        directory = layout.partition_dir(self.data_dir, topic, partition)
        try:
            if directory.exists():
                doomed = layout.delete_dir(directory, os.urandom(4).hex())
                directory.rename(doomed)
                shutil.rmtree(doomed, ignore_errors=True)
        except OSError as exc:
            raise KafkaStorageError(f"cannot delete {directory}: {exc}") from exc

    def checkpoint_all(self) -> None:
        """Flush every log and write its offsets checkpoint (safe on a worker thread)."""
        for key, opened in list(self.logs.items()):
            try:
                opened.checkpoint()
            except KafkaStorageError:
                if self.logs.get(key) is opened:  # not deleted meanwhile
                    raise

    def retention_all(self, now_ms: int) -> int:
        deleted = 0
        for key, opened in list(self.logs.items()):
            n = opened.apply_retention(now_ms)
            if n:
                log.info("retention deleted %d segment(s) of %s-%d", n, *key)
            deleted += n
        return deleted

    def close_all(self) -> None:
        self.writeback.close()
        for opened in self.logs.values():
            opened.close()
        self.logs.clear()
        self.files.close_all()
