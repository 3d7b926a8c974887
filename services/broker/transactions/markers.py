"""Writing a transaction's markers (Kafka's ``TransactionMarkerChannelManager``).

Once a transaction is PrepareCommit or PrepareAbort in ZooKeeper, WriteTxnMarkers v1 goes to
the current leader of every partition of the transaction, and for ``__consumer_offsets``
partitions to the group coordinator of each group whose offsets it commits, until each one
acknowledged. Retriable errors and lost connections are retried after a back-off with the
leader looked up again; a partition of a deleted topic is skipped (Kafka skips a partition
whose leader it cannot find; here only once ZooKeeper confirms the topic is gone); a fenced
producer epoch or coordinator means another coordinator owns the id now, and sending stops.
Connections are pafka's own client's (:class:`ClusterClient`), with its deadlines.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pafka.client.cluster import ClusterClient
from pafka.errors import (
    InvalidProducerEpochError,
    PafkaError,
    TransactionCoordinatorFencedError,
    UnknownTopicOrPartitionError,
)
from pafka.groups.offsets_partition import offsets_partition
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from pafka.transactions.metadata import OFFSETS_TOPIC, TopicPartition, TxnMetadata
from pafka.transactions.state import TxnState

log = logging.getLogger(__name__)

MARKERS_VERSION = 1
MAX_BACKOFF_S = 1.0
STUCK_LOG_ROUNDS = 100
UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
# Errors meaning this coordinator's markers are no longer wanted (Kafka's abortSending).
_STOP = frozenset({InvalidProducerEpochError.code, TransactionCoordinatorFencedError.code})


class MarkerSender:
    def __init__(
        self,
        cluster: ClusterClient,
        group_coordinator: Callable[[str], Awaitable[int]],
        topic_exists: Callable[[str], Awaitable[bool]],
        backoff_ms: int,
    ) -> None:
        self.cluster = cluster
        self._group_coordinator = group_coordinator
        self._topic_exists = topic_exists
        self._backoff_s = backoff_ms / 1000
        self._started = False

    async def close(self) -> None:
        await self.cluster.close()

    async def write(
        self, meta: TxnMetadata, coordinator_epoch: int, current: Callable[[], bool]
    ) -> bool:
        """Send until every partition and group acknowledged (True), or until ``current`` says
        this coordinator stopped holding the transaction or a broker says it is fenced (False)."""
        committed = meta.state is TxnState.PREPARE_COMMIT
        pending: set[TopicPartition] = set(meta.data_partitions)
        groups: set[str] = set(meta.groups)
        rounds, waiting = 0, len(pending) + len(groups)
        while pending or groups:
            if not current():
                return False
            if not self._started:
                try:
                    await self.cluster.start(timeout_s=self._backoff_s * 50)
                    self._started = True
                except PafkaError as exc:
                    log.warning("markers of %r wait for brokers: %s", meta.transactional_id, exc)
                    await asyncio.sleep(self._backoff_s)
                    continue
            targets = await self._targets(pending, groups)
            outcomes = await asyncio.gather(
                *(
                    self._send(broker, tps, meta, committed, coordinator_epoch)
                    for broker, (tps, _) in targets.items()
                )
            )
            for (broker, (_, by_partition)), acked in zip(targets.items(), outcomes, strict=True):
                if acked is None:
                    return False
                for tp in acked:
                    if tp[0] == OFFSETS_TOPIC and tp in by_partition:
                        groups.difference_update(by_partition[tp])
                    else:
                        pending.discard(tp)
                log.debug("broker %d acknowledged %d marker(s)", broker, len(acked))
            if pending or groups:
                rounds = rounds + 1 if len(pending) + len(groups) == waiting else 1
                waiting = len(pending) + len(groups)
                if rounds % STUCK_LOG_ROUNDS == 0:
                    log.warning(
                        "markers of %r still unacknowledged after %d rounds: %s %s",
                        meta.transactional_id,
                        rounds,
                        sorted(pending),
                        sorted(groups),
                    )
                # Doubling while nothing moves, so an unreachable leader is not hammered.
                await asyncio.sleep(min(self._backoff_s * 2 ** min(rounds - 1, 10), MAX_BACKOFF_S))
        return True

    async def _targets(
        self, pending: set[TopicPartition], groups: set[str]
    ) -> dict[int, tuple[set[TopicPartition], dict[TopicPartition, set[str]]]]:
        """Which broker gets which partitions now; deleted topics' partitions are dropped."""
        targets: dict[int, tuple[set[TopicPartition], dict[TopicPartition, set[str]]]] = {}
        for tp in sorted(pending):
            try:
                leader = await self.cluster.leader(*tp)
            except UnknownTopicOrPartitionError:
                # A broker's metadata may lag (one just restarted knows no topic): only a topic
                # ZooKeeper no longer has is skipped.
                if not await self._topic_exists(tp[0]):
                    log.info("skipping the marker of %s-%d: the topic was deleted", *tp)
                    pending.discard(tp)
                self.cluster.forget(tp[0])
                continue
            except PafkaError as exc:
                log.info("no leader for %s-%d yet: %s", tp[0], tp[1], exc)
                self.cluster.forget(tp[0])
                continue
            targets.setdefault(leader, (set(), {}))[0].add(tp)
        for group in sorted(groups):
            try:
                broker = await self._group_coordinator(group)
            except PafkaError as exc:
                log.info("no coordinator for group %r yet: %s", group, exc)
                continue
            tp = (OFFSETS_TOPIC, offsets_partition(group))
            tps, by_partition = targets.setdefault(broker, (set(), {}))
            tps.add(tp)
            by_partition.setdefault(tp, set()).add(group)
        return targets

    async def _send(
        self,
        broker: int,
        tps: set[TopicPartition],
        meta: TxnMetadata,
        committed: bool,
        coordinator_epoch: int,
    ) -> set[TopicPartition] | None:
        """The partitions ``broker`` acknowledged; None if it says the marker is fenced."""
        cls = request_class(ApiKey.WRITE_TXN_MARKERS)[MARKERS_VERSION]
        marker_cls: Any = cls.WritableTxnMarker
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(tps):
            by_topic.setdefault(topic, []).append(partition)
        marker = marker_cls(
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            transaction_result=committed,
            topics=[
                marker_cls.WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ],
            coordinator_epoch=coordinator_epoch,
        )
        try:
            response = await self.cluster.call(
                broker, ApiKey.WRITE_TXN_MARKERS, MARKERS_VERSION, cls(markers=[marker])
            )
        except PafkaError as exc:
            log.info("WriteTxnMarkers to broker %d failed, retrying: %s", broker, exc)
            for topic in by_topic:
                self.cluster.forget(topic)
            return set()
        acked: set[TopicPartition] = set()
        for result in response.markers:
            for topic in result.topics:
                for p in topic.partitions:
                    tp = (topic.name, p.partition_index)
                    if p.error_code in (0, UNSUPPORTED_FOR_MESSAGE_FORMAT):
                        acked.add(tp)
                    elif p.error_code in _STOP:
                        log.warning(
                            "marker of %r refused by broker %d with error %d: another "
                            "coordinator owns it",
                            meta.transactional_id,
                            broker,
                            p.error_code,
                        )
                        return None
                    else:
                        self.cluster.forget(topic.name)
        return acked
