"""DescribeLogDirs: the size on disk of the replicas a broker holds, as
``kafka-log-dirs.sh --describe`` asks each broker for its own.

Each broker answers only for itself, and only for the partitions it hosts (others are left
out, as Kafka leaves them out). Kafka 2.8 answers a caller without DESCRIBE on the cluster with
no log directories at all rather than an error; every broker has one, so an empty answer is
that refusal, raised as :class:`ClusterAuthorizationFailedError`.
"""

from __future__ import annotations

from collections.abc import Iterable

from pafka.client.cluster import ClusterClient
from pafka.errors import ClusterAuthorizationFailedError, for_code
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

DESCRIBE_LOG_DIRS_VERSION = 1


async def replica_sizes(
    cluster: ClusterClient, broker_id: int, partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Bytes on disk of each of ``partitions`` that broker ``broker_id`` holds (summed over its
    log directories; pafka brokers have one)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    cls = request_class(ApiKey.DESCRIBE_LOG_DIRS)[DESCRIBE_LOG_DIRS_VERSION]
    body = cls(
        topics=[
            cls.DescribableLogDirTopic(topic=topic, partitions=sorted(ps))
            for topic, ps in sorted(by_topic.items())
        ]
    )
    response = await cluster.call(
        broker_id, ApiKey.DESCRIBE_LOG_DIRS, DESCRIBE_LOG_DIRS_VERSION, body
    )
    if not response.results:
        raise ClusterAuthorizationFailedError(
            f"broker {broker_id} described no log directory: DESCRIBE on the cluster is needed"
        )
    sizes: dict[tuple[str, int], int] = {}
    for result in response.results:
        if result.error_code:
            raise for_code(result.error_code, f"broker {broker_id} log dir {result.log_dir}")
        for topic_answer in result.topics:
            for p in topic_answer.partitions:
                if not p.is_future_key:
                    key = (topic_answer.name, p.partition_index)
                    sizes[key] = sizes.get(key, 0) + int(p.partition_size)
    return sizes
