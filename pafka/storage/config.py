"""Per-log settings: how segments roll, how long data is kept and how compacted logs are cleaned
(Kafka's topic-level names)."""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = 7 * DAY_MS  # segment.ms
    retention_ms: int = 7 * DAY_MS  # retention.ms; -1 keeps data forever
    retention_bytes: int = -1  # retention.bytes; -1 means no size limit
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    max_message_bytes: int = 1024 * 1024 + 12  # max.message.bytes (one batch)
    cleanup_policy: str = "delete"  # cleanup.policy: delete | compact | compact,delete
    flush_messages: int = 2**63 - 1  # flush.messages; fsync cadence, default left to the OS
    delete_retention_ms: int = DAY_MS  # delete.retention.ms: how long tombstones stay
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = 2**63 - 1  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio

    @property
    def compacted(self) -> bool:
        return policy_compacts(self.cleanup_policy)

    @property
    def deletes(self) -> bool:
        """Whether time and size retention apply (``delete`` is in the policy)."""
        return policy_deletes(self.cleanup_policy)


def policy_compacts(cleanup_policy: str) -> bool:
    """Whether the log cleaner compacts a log with this ``cleanup.policy``."""
    return "compact" in cleanup_policy.split(",")


def policy_deletes(cleanup_policy: str) -> bool:
    """Whether retention by time and size applies to a log with this ``cleanup.policy``."""
    return "delete" in cleanup_policy.split(",")
