"""DeleteRecords and ElectLeaders over the Kafka protocol, what ``kafka-delete-records.sh`` and
``kafka-leader-election.sh`` do: records go to each partition's leader, elections to any
broker (which hands them to the active controller).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pafka.client.cluster import ClusterClient
from pafka.cluster.elect_leaders import ElectionType
from pafka.errors import KafkaApiError, NotLeaderOrFollowerError, for_code
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

DELETE_RECORDS_VERSION = 1
ELECT_LEADERS_VERSION = 1
TopicPartition = tuple[str, int]


async def delete_records(
    cluster: ClusterClient, offsets: Mapping[TopicPartition, int], timeout_ms: int = 30_000
) -> dict[TopicPartition, int | KafkaApiError]:
    """Move each partition's log start offset (-1: to its high watermark); the new low
    watermark of each, or the error its leader answered."""
    cls = request_class(ApiKey.DELETE_RECORDS)[DELETE_RECORDS_VERSION]
    topic_cls = cls.DeleteRecordsTopic
    outcome: dict[TopicPartition, int | KafkaApiError] = {}
    for (topic, partition), offset in offsets.items():
        for attempt in range(2):
            leader = await cluster.leader(topic, partition, refresh=attempt > 0)
            body = cls(
                topics=[
                    topic_cls(
                        name=topic,
                        partitions=[
                            topic_cls.DeleteRecordsPartition(
                                partition_index=partition, offset=offset
                            )
                        ],
                    )
                ],
                timeout_ms=timeout_ms,
            )
            response = await cluster.call(
                leader, ApiKey.DELETE_RECORDS, DELETE_RECORDS_VERSION, body
            )
            (result,) = response.topics[0].partitions
            if result.error_code == NotLeaderOrFollowerError.code and attempt == 0:
                continue  # leadership moved: ask again
            outcome[(topic, partition)] = (
                for_code(result.error_code, f"{topic}-{partition}")
                if result.error_code
                else int(result.low_watermark)
            )
            break
    return outcome


async def elect_leaders(
    cluster: ClusterClient,
    kind: ElectionType,
    partitions: Iterable[TopicPartition] | None,
    timeout_ms: int = 60_000,
) -> dict[TopicPartition, KafkaApiError | None]:
    """Elect leaders (every partition when None); each partition's outcome, None for
    elected. With None, partitions that needed no election are not listed (Kafka's answer)."""
    cls = request_class(ApiKey.ELECT_LEADERS)[ELECT_LEADERS_VERSION]
    wanted = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        wanted = [cls.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
    body = cls(election_type=int(kind), topic_partitions=wanted, timeout_ms=timeout_ms)
    response = await cluster.call_any(ApiKey.ELECT_LEADERS, ELECT_LEADERS_VERSION, body)
    if response.error_code:
        raise for_code(response.error_code, "leader election")
    return {
        (r.topic, p.partition_id): (
            for_code(p.error_code, p.error_message or f"{r.topic}-{p.partition_id}")
            if p.error_code
            else None
        )
        for r in response.replica_election_results
        for p in r.partition_result
    }
