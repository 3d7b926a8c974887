"""ListOffsets v0: up to ``max_num_offsets`` segment start offsets before a time, per partition
(:mod:`pafka.storage.legacy_offsets`), as Kafka 2.8 answers clients of before KIP-79."""

from __future__ import annotations

import time
from typing import Any

from pafka.errors import PafkaError
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from pafka.storage import legacy_offsets
from services.broker.handlers.authorization import require_topic
from services.broker.handlers.context import RequestContext


async def handle_list_offsets_v0(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, 0)
    topic_cls = cls.ListOffsetsTopicResponse
    part_cls = topic_cls.ListOffsetsPartitionResponse
    from_consumer = request.replica_id == legacy_offsets.CONSUMER_REPLICA_ID
    now_ms = int(time.time() * 1000)
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            try:
                require_topic(ctx, Operation.DESCRIBE, t.name)
                partition = ctx.broker.replicas.leader_partition(t.name, p.partition_index)
                log = partition.log
                offsets = legacy_offsets.offsets_before(
                    legacy_offsets.log_points(log, now_ms), int(p.timestamp), p.max_num_offsets
                )
                if from_consumer:
                    offsets = legacy_offsets.cap_at_high_watermark(offsets, log.high_watermark)
                parts.append(
                    part_cls(
                        partition_index=p.partition_index, error_code=0, old_style_offsets=offsets
                    )
                )
            except PafkaError as exc:
                parts.append(
                    part_cls(
                        partition_index=p.partition_index,
                        error_code=ctx.error(exc.code),
                        old_style_offsets=[],
                    )
                )
        topics.append(topic_cls(name=t.name, partitions=parts))
    return cls(topics=topics)
