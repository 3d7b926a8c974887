"""WriteTxnMarkers (API 27): a transaction coordinator ends a transaction on its partitions.

For each marker and partition the leader appends a control batch (COMMIT or ABORT, with the
coordinator's epoch, ``pafka.records.control``) and answers once it is replicated as an acks=all
write is, as Kafka's ``handleWriteTxnMarkersRequest`` does: UNKNOWN_TOPIC_OR_PARTITION and
NOT_LEADER_OR_FOLLOWER as for a produce, NOT_ENOUGH_REPLICAS below ``min.insync.replicas``,
INVALID_PRODUCER_EPOCH for an epoch older than the partition holds, and
TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch. All partitions of a request
wait for replication together.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pafka.errors import (
    ClusterAuthorizationFailedError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    PafkaError,
    for_code,
    wire_error,
)
from pafka.protocol.messages import response_class
from pafka.records.batch import read_header
from pafka.records.control import build_marker, parse_marker
from pafka.security.acls import Operation
from services.broker.handlers.authorization import cluster_allowed
from services.broker.handlers.context import RequestContext
from services.broker.handlers.txn_offset_markers import offsets_marker_error
from services.broker.leader_fencing import refuses
from services.broker.partition import Partition

# Kafka waits for a marker's replication for request.timeout.ms (default 30 s).
MARKER_REPLICATION_TIMEOUT_MS = 30_000
# Kafka completes the markers of the group coordinator's own partitions in the group
# coordinator (the offsets a transaction committed become visible or are dropped).
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


def write_marker(
    partition: Partition,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
) -> int:
    """Append one marker on the leader; returns its offset."""
    partition.ensure_leader()
    if len(partition.isr) < partition.config.min_insync_replicas:
        raise NotEnoughReplicasError(
            f"{partition.topic}-{partition.index} has {len(partition.isr)} in-sync replicas, "
            f"min.insync.replicas is {partition.config.min_insync_replicas}"
        )
    if refuses(-1, partition.fenced_why is not None):
        raise NotLeaderOrFollowerError(f"{partition!r}: {partition.fenced_why}")
    partition.txns.check_marker(producer_id, producer_epoch, coordinator_epoch)
    now_ms = int(time.time() * 1000)
    batch = build_marker(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        commit=commit,
        coordinator_epoch=coordinator_epoch,
        timestamp_ms=now_ms,
    )
    partition.followers.on_leader_append(partition.log.log_end_offset, now_ms)
    info = partition.log.append(
        batch, leader_epoch=partition.leader_epoch, now_ms=now_ms, control=True
    )
    head = read_header(batch)._replace(base_offset=info.first_offset)
    partition.txns.on_marker(head, info.first_offset, parse_marker(batch))
    partition.notifier.notify()
    partition.advance_high_watermark()
    return info.first_offset


async def _replicated(partition: Partition | None, outcome: int | PafkaError) -> int:
    """The error code of one partition once its marker is replicated (or failed)."""
    if isinstance(outcome, PafkaError):
        return wire_error(outcome).code
    if partition is None:
        return 0  # completed without a log (a group's transactional offsets)
    try:
        await partition.wait_replicated(outcome, MARKER_REPLICATION_TIMEOUT_MS)
    except PafkaError as exc:
        return wire_error(exc).code
    return 0


async def handle_write_txn_markers(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    marker_cls = cls.WritableTxnMarkerResult
    topic_cls = marker_cls.WritableTxnMarkerTopicResult
    part_cls = topic_cls.WritableTxnMarkerPartitionResult
    # (marker index, topic, partition index, partition, offset or error)
    written: list[tuple[int, str, int, Partition | None, int | PafkaError]] = []
    # Only brokers (the coordinators) write markers: CLUSTER_ACTION, else every partition
    # refused.
    refused = (
        None
        if cluster_allowed(ctx, Operation.CLUSTER_ACTION)
        else ClusterAuthorizationFailedError()
    )
    for i, marker in enumerate(request.markers):
        for topic in marker.topics:
            for index in topic.partition_indexes:
                partition: Partition | None = None
                outcome: int | PafkaError
                try:
                    if refused is not None:
                        raise refused
                    if topic.name == CONSUMER_OFFSETS_TOPIC:
                        # Completed by the group coordinator, which holds the offsets a
                        # transaction committed in ZooKeeper: no log, nothing to replicate.
                        code = await offsets_marker_error(broker, marker, index)
                        if code:
                            raise for_code(code, f"{topic.name}-{index}: offsets not completed")
                        written.append((i, topic.name, index, None, 0))
                        continue
                    partition = broker.replicas.leader_partition(topic.name, index)
                    outcome = write_marker(
                        partition,
                        marker.producer_id,
                        marker.producer_epoch,
                        bool(marker.transaction_result),
                        marker.coordinator_epoch,
                    )
                except PafkaError as exc:
                    outcome = exc
                written.append((i, topic.name, index, partition, outcome))
    codes = await asyncio.gather(*(_replicated(p, o) for _, _, _, p, o in written))
    by_marker: list[dict[str, list[Any]]] = [{} for _ in request.markers]
    for (i, name, index, _, _), code in zip(written, codes, strict=True):
        by_marker[i].setdefault(name, []).append(
            part_cls(partition_index=index, error_code=ctx.error(code))
        )
    return cls(
        markers=[
            marker_cls(
                producer_id=marker.producer_id,
                topics=[topic_cls(name=n, partitions=ps) for n, ps in by_marker[i].items()],
            )
            for i, marker in enumerate(request.markers)
        ]
    )
