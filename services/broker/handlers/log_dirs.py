"""DescribeLogDirs: this broker's one log directory and the size of each partition in it.

Partitions the request names that this broker does not host are left out, as Kafka leaves
them out. ``offset_lag`` is Kafka's for a current (not future) log: how far the log end is
behind the high watermark, which is never the case for a leader and rarely for a follower.
"""

from __future__ import annotations

from typing import Any

from pafka.errors import PafkaError
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from services.broker.handlers.authorization import cluster_allowed
from services.broker.handlers.context import RequestContext


async def handle_describe_log_dirs(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    cls = response_class(ctx.api_key, ctx.api_version)
    result_cls = cls.DescribeLogDirsResult
    topic_cls = result_cls.DescribeLogDirsTopic
    if not cluster_allowed(ctx, Operation.DESCRIBE):
        # Kafka 2.8 answers a caller without DESCRIBE on the cluster with no log dirs.
        return cls(throttle_time_ms=0, results=[])
    wanted: set[tuple[str, int]] | None = None
    if request.topics is not None:
        wanted = {(t.topic, p) for t in request.topics for p in t.partitions}
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), partition in sorted(broker.replicas.partitions.items()):
        if wanted is not None and (topic, index) not in wanted:
            continue
        log_ = partition.log
        try:
            size = log_.size_bytes
        except PafkaError:
            size = 0  # a log being deleted under us: reported empty, not an error
        by_topic.setdefault(topic, []).append(
            topic_cls.DescribeLogDirsPartition(
                partition_index=index,
                partition_size=size,
                offset_lag=max(log_.high_watermark - log_.log_end_offset, 0),
                is_future_key=False,
            )
        )
    topics = [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
    result = result_cls(error_code=0, log_dir=str(broker.settings.data_dir), topics=topics)
    return cls(throttle_time_ms=0, results=[result])
