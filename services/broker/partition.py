"""One partition replica hosted by this broker: its log, role, leader epoch and producer state.

Invariants:
* only the leader appends client writes; a follower's log changes only by replication;
* a LeaderAndIsr with a leader epoch older than the one held is ignored (a delayed message from
  an earlier decision must not undo a later one);
* consumers never read at or above the high watermark;
* a leader cut off from both ZooKeeper and its in-sync followers refuses acks=all writes
  (``leader_fencing``) until either comes back.

The leader's high watermark is the smallest log end offset over the ISR (see ``followers``);
followers learn it from their fetch responses. ISR changes the leader wants are returned to the
caller, which writes them to ZooKeeper and then calls :meth:`Partition.set_isr`.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import PartitionInfo
from pafka.errors import (
    FencedLeaderEpochError,
    InvalidRequiredAcksError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    UnknownLeaderEpochError,
    UnsupportedVersionError,
)
from pafka.records.batch import BatchHeader, iter_batches
from pafka.storage.log import Log
from pafka.storage.region import FileRegion
from services.broker.append_checks import checked_for_append
from services.broker.followers import Followers
from services.broker.leader_fencing import fenced, refuses
from services.broker.notify import Notifier, wait_any
from services.broker.partition_txns import PartitionTxns
from services.broker.producer_state import BatchRecord, ProducerStateTable

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1


@dataclass(frozen=True)
class AppendResult:
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    last_offset: int = -1


@dataclass(frozen=True)
class ReadResult:
    records: bytes | memoryview | FileRegion
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int = -1
    # read_committed only: (producer id, first offset) of the aborted transactions overlapping
    # the records; None for read_uncommitted.
    aborted_transactions: tuple[tuple[int, int], ...] | None = None


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
        self.zk_version = -1
        self.controller_epoch = -1
        self.followers = Followers()
        # Why this leader refuses acks=all writes (``leader_fencing``); None while it takes them.
        self.fenced_why: str | None = None
        self.producers = ProducerStateTable()
        self.txns = PartitionTxns(log_, self.producers)
        # Fetch sessions watching this partition are told its key when it changes.
        self.notifier = Notifier((topic, index))
        self._rebuild_producer_state()

    def _rebuild_producer_state(self) -> None:
        """Recover idempotence and transaction state (snapshot, then the log after it), so a
        producer retrying across a broker restart still gets its duplicates recognised and
        open transactions stay open."""
        self.txns.reload(lambda head: self._remember(head, head.base_offset, head.max_timestamp))

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
        became_leader = info.leader == broker_id and (
            not self.is_leader or info.leader_epoch != self.leader_epoch
        )
        self.topic_id = info.topic_id
        self.leader = info.leader
        self.leader_epoch = info.leader_epoch
        self.isr = info.isr
        self.replicas = info.replicas
        self.zk_version = info.zk_version
        self.controller_epoch = info.controller_epoch
        self.is_leader = info.leader == broker_id
        if not self.is_leader:
            self.fenced_why = None
        if became_leader:
            now_ms = int(time.time() * 1000)
            self.followers.reset([r for r in info.replicas if r != broker_id], now_ms)
            if self.log.epochs.assign(info.leader_epoch, self.log.log_end_offset):
                self.log.epochs_changed()
        if self.is_leader:
            self.advance_high_watermark()
        self.notifier.notify()
        return True

    def set_isr(self, isr: tuple[int, ...], zk_version: int) -> None:
        """The ISR as now recorded in ZooKeeper (after this leader's conditional write)."""
        self.isr = isr
        self.zk_version = zk_version
        self.advance_high_watermark()

    def advance_high_watermark(self) -> None:
        hw = self.followers.high_watermark(self.isr, self.leader, self.log.log_end_offset)
        if hw is not None and hw > self.log.high_watermark:
            self.log.high_watermark = hw
            self.notifier.notify()

    def on_follower_fetch(self, follower: int, fetch_offset: int, now_ms: int) -> None:
        self.followers.on_fetch(follower, fetch_offset, self.log.log_end_offset, now_ms)
        self.advance_high_watermark()

    def update_footing(self, zk_connected: bool, now_ms: int, lag_max_ms: int, why: str) -> bool:
        """Fence or unfence this leader for acks=all writes; True when that changed. Writes
        waiting for replication are woken to fail when it becomes fenced."""
        is_fenced = self.is_leader and fenced(
            zk_connected=zk_connected,
            isr_followers=[r for r in self.isr if r != self.leader],
            lagging=self.followers.lagging(
                self.isr, self.leader, self.log.log_end_offset, now_ms, lag_max_ms
            ),
        )
        if is_fenced == (self.fenced_why is not None):
            return False
        self.fenced_why = why if is_fenced else None
        if is_fenced:
            self.notifier.notify()
        return True

    def isr_to_expand(self) -> tuple[int, ...] | None:
        joining = [
            r
            for r in self.replicas
            if r not in self.isr
            and r != self.leader
            and self.followers.caught_up(r, self.log.high_watermark)
        ]
        return tuple(self.isr) + tuple(joining) if joining else None

    def isr_to_shrink(self, now_ms: int, lag_max_ms: int) -> tuple[int, ...] | None:
        lagging = self.followers.lagging(
            self.isr, self.leader, self.log.log_end_offset, now_ms, lag_max_ms
        )
        return tuple(r for r in self.isr if r not in lagging) if lagging else None

    def ensure_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(
                f"broker is not the leader for {self.topic}-{self.index} (leader is {self.leader})"
            )

    def append_as_leader(
        self, records: bytes | memoryview, acks: int, transactional_id: str | None = None
    ) -> AppendResult:
        self.ensure_leader()
        if acks not in (-1, 0, 1):
            raise InvalidRequiredAcksError(f"acks must be -1, 0 or 1, not {acks}")
        if acks == -1 and len(self.isr) < self.config.min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index} has {len(self.isr)} in-sync replicas, "
                f"min.insync.replicas is {self.config.min_insync_replicas}"
            )
        if refuses(acks, self.fenced_why is not None):
            raise NotLeaderOrFollowerError(f"{self.topic}-{self.index}: {self.fenced_why}")
        now_ms = int(time.time() * 1000)
        headers = [h for _, h in iter_batches(records)]
        if not headers:
            raise UnsupportedVersionError("produce request carries no record batch")
        records = checked_for_append(records, headers, self.config, now_ms, self.topic, self.index)
        idempotent = [h for h in headers if h.producer_id != NO_PRODUCER_ID]
        if idempotent:
            if len(headers) != 1:
                raise UnsupportedVersionError(
                    "an idempotent producer must send one batch per partition per request"
                )
            head = idempotent[0]
            duplicate = self.producers.check(
                head.producer_id,
                head.producer_epoch,
                head.base_sequence,
                head.base_sequence + head.last_offset_delta,
            )
            if duplicate is not None:
                return AppendResult(
                    duplicate.first_offset, -1, self.log.log_start_offset, duplicate.last_offset
                )
            self.txns.check_client_batch(head, transactional_id)
        self.followers.on_leader_append(self.log.log_end_offset, now_ms)
        info = self.log.append(records, leader_epoch=self.leader_epoch, now_ms=now_ms)
        for head in idempotent:
            self._remember(head, info.first_offset, now_ms)
            self.txns.on_data(head, info.first_offset)
        self.notifier.notify()
        self.advance_high_watermark()
        append_time = now_ms if self.config.message_timestamp_type == "LogAppendTime" else -1
        return AppendResult(
            info.first_offset, append_time, self.log.log_start_offset, info.last_offset
        )

    async def wait_replicated(self, offset: int, timeout_ms: int) -> None:
        """acks=all: wait until the high watermark passes ``offset``, or fail as Kafka does."""
        deadline = time.monotonic() + timeout_ms / 1000
        while self.log.high_watermark <= offset:
            if not self.is_leader:
                raise NotLeaderOrFollowerError(f"{self!r} lost leadership before replication")
            if self.fenced_why is not None:
                raise NotEnoughReplicasAfterAppendError(f"{self!r}: {self.fenced_why}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimedOutError(f"{self!r}: replication of offset {offset} timed out")
            await wait_any([self.notifier], remaining)
        if len(self.isr) < self.config.min_insync_replicas:
            raise NotEnoughReplicasAfterAppendError(
                f"{self!r}: the ISR shrank to {len(self.isr)} below min.insync.replicas"
            )

    def append_as_follower(
        self,
        records: bytes | memoryview,
        leader_high_watermark: int,
        leader_log_start_offset: int = -1,
    ) -> None:
        if records:
            if self.log.log_end_offset == self.log.log_start_offset:
                self._start_at_first_batch(records)
            info = self.log.append_as_follower(bytes(records), int(time.time() * 1000))
            if info is not None:
                for _, head in iter_batches(records):
                    if head.producer_id != NO_PRODUCER_ID and not head.is_control:
                        self._remember(head, head.base_offset, head.max_timestamp)
                self.txns.apply(records)
        hw = min(leader_high_watermark, self.log.log_end_offset)
        if hw > self.log.high_watermark:
            self.log.high_watermark = hw
        if leader_log_start_offset > self.log.log_start_offset:
            # DeleteRecords (or retention) on the leader: the follower's log starts there too
            # (capped at its high watermark, since it cannot drop what it has not confirmed).
            self.log.delete_records_before(leader_log_start_offset)

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)
        self._rebuild_producer_state()
        self.notifier.notify()

    def _start_at_first_batch(self, records: bytes | memoryview) -> None:
        """An empty log started at the leader's log start, which may fall inside a batch: the
        leader sends that whole batch, so the log starts at its base instead (Kafka's answer
        to an unexpected append offset); the leader's start offset is applied after."""
        first = next(iter_batches(records), None)
        if first is not None and first[1].base_offset < self.log.log_end_offset:
            self.truncate_fully_and_start_at(first[1].base_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """The leader's log starts past this follower's end: continue, empty, from there."""
        self.log.truncate_fully_and_start_at(offset)
        self.producers.truncate_to(0)
        self.txns.state.clear()
        self.notifier.notify()

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Fence requests made against another leader epoch (KIP-320); -1 means unknown."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"leader epoch {current_leader_epoch} is older than {self.leader_epoch}"
            )
        raise UnknownLeaderEpochError(
            f"leader epoch {current_leader_epoch} is newer than {self.leader_epoch}"
        )

    def read_for_follower(
        self,
        follower: int,
        offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        min_region_bytes: int | None = None,
    ) -> ReadResult:
        """A follower's fetch: records up to the log end, and its position noted."""
        self.ensure_leader()
        if follower not in self.replicas:
            raise NotLeaderOrFollowerError(f"broker {follower} is not a replica of {self!r}")
        self.check_leader_epoch(current_leader_epoch)
        self.on_follower_fetch(follower, offset, int(time.time() * 1000))
        return self.read(
            offset, max_bytes, up_to_high_watermark=False, min_region_bytes=min_region_bytes
        )

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        up_to_high_watermark: bool,
        min_region_bytes: int | None = None,
        read_committed: bool = False,
    ) -> ReadResult:
        """Records from ``offset``; with ``min_region_bytes``, as a file region when at least
        that large (for a response sent to a socket). ``read_committed`` reads only up to the
        last stable offset and names the aborted transactions among the records."""
        self.ensure_leader()
        stable = self.txns.last_stable_offset()
        max_offset = self.log.high_watermark if up_to_high_watermark else None
        if read_committed:
            max_offset = stable
        data: bytes | memoryview | FileRegion
        if min_region_bytes is None:
            data = self.log.read(offset, max_bytes, max_offset=max_offset)
        else:
            data = self.log.read_for_send(
                offset, max_bytes, max_offset=max_offset, min_region_bytes=min_region_bytes
            )
        return ReadResult(
            records=data,
            high_watermark=self.log.high_watermark,
            log_start_offset=self.log.log_start_offset,
            log_end_offset=self.log.log_end_offset,
            last_stable_offset=stable,
            aborted_transactions=self.txns.aborted_between(offset, stable)
            if read_committed
            else None,
        )
