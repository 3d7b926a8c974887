"""One partition replica hosted by this broker: its log, role, leader epoch and producer state.

Invariants:
* only the leader appends client writes; a follower's log changes only by replication;
* a LeaderAndIsr with a leader epoch older than the one held is ignored (a delayed message from
  an earlier decision must not undo a later one);
* consumers never read at or above the high watermark.

Replication between brokers is not built yet: the leader's high watermark follows its log end
offset directly. When followers fetch, it becomes the minimum log end offset over the ISR.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import PartitionInfo
from pafka.errors import (
    InvalidRequiredAcksError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnsupportedVersionError,
)
from pafka.records.batch import BatchHeader, iter_batches
from pafka.storage.log import Log
from services.broker.notify import Notifier
from services.broker.producer_state import BatchRecord, ProducerStateTable

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1


@dataclass(frozen=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


@dataclass(frozen=True)
class ReadResult:
    records: bytes | memoryview
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class Partition:
    def __init__(self, topic: str, index: int, log_: Log, config: TopicConfig) -> None:
        self.topic = topic
        self.index = index
        self.log = log_
        self.config = config
        self.topic_id: uuid.UUID | None = None
        self.leader = -1
        self.leader_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.is_leader = False
        self.producers = ProducerStateTable()
        self.notifier = Notifier()
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Recover idempotence state from the log's recent batches, so a producer retrying
        across a broker restart still gets its duplicates recognised."""
        recent = max(len(self.log.segments) - 2, 0)
        for head in self.log.iter_headers(recent):
            if head.producer_id != NO_PRODUCER_ID:
                self._remember(head, head.base_offset, head.max_timestamp)

    def _remember(self, head: BatchHeader, first_offset: int, timestamp_ms: int) -> None:
        self.producers.record(
            head.producer_id,
            head.producer_epoch,
            BatchRecord(
                first_seq=head.base_sequence,
                last_seq=head.base_sequence + head.last_offset_delta,
                first_offset=first_offset,
                last_offset=first_offset + head.last_offset_delta,
                timestamp_ms=timestamp_ms,
            ),
        )

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index}, leader={self.leader}, epoch={self.leader_epoch})"
        )

    def apply(self, info: PartitionInfo, broker_id: int) -> bool:
        """Take the role the controller decided; False when the message is stale."""
        if info.leader_epoch < self.leader_epoch:
            log.info("%r ignores stale leader epoch %d", self, info.leader_epoch)
            return False
        self.topic_id = info.topic_id
        self.leader = info.leader
        self.leader_epoch = info.leader_epoch
        self.isr = info.isr
        self.replicas = info.replicas
        self.is_leader = info.leader == broker_id
        if self.is_leader:
            self._advance_high_watermark()
        self.notifier.notify()
        return True

    def _advance_high_watermark(self) -> None:
        if self.log.high_watermark != self.log.log_end_offset:
            self.log.high_watermark = self.log.log_end_offset

    def ensure_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker is not the leader for {self.topic}-{self.index} (leader is {self.leader})"
            )

    def append_as_leader(self, records: bytes, acks: int) -> AppendResult:
        self.ensure_leader()
        if acks not in (-1, 0, 1):
            raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
        if acks == -1 and len(self.isr) < self.config.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index} has {len(self.isr)} in-sync replicas, "
                f"min.insync.replicas is {self.config.min_insync_replicas}"
            )
        now_ms = int(time.time() * 1000)
        headers = [h for _, h in iter_batches(records)]
        if not headers:
            raise UnsupportedVersionError("produce request carries no record batch")
        idempotent = [h for h in headers if h.producer_id != NO_PRODUCER_ID]
        if idempotent:
            if len(headers) != 1:
                raise UnsupportedVersionError(
                    "an idempotent producer must send one batch per partition per request"
                )
            head = idempotent[0]
            duplicate = self.producers.check(
                head.producer_id, head.producer_epoch, head.base_sequence
            )
            if duplicate is not None:
                return AppendResult(duplicate.first_offset, -1, self.log.log_start_offset)
        info = self.log.append(records, leader_epoch=self.leader_epoch, now_ms=now_ms)
        for head in idempotent:
            self._remember(head, info.first_offset, now_ms)
        self._advance_high_watermark()
        self.notifier.notify()
        append_time = now_ms if self.config.message_timestamp_type == "LogAppendTime" else -1
        return AppendResult(info.first_offset, append_time, self.log.log_start_offset)

    def read(self, offset: int, max_bytes: int, *, up_to_high_watermark: bool) -> ReadResult:
        self.ensure_leader()
        max_offset = self.log.high_watermark if up_to_high_watermark else None
        data = self.log.read(offset, max_bytes, max_offset=max_offset)
        return ReadResult(
            records=data,
            high_watermark=self.log.high_watermark,
            log_start_offset=self.log.log_start_offset,
            log_end_offset=self.log.log_end_offset,
        )
