"""A topic's metadata as the gateway's routes need it, waiting out a topic created a moment ago.

A topic exists once its znode is written (by the CLI, a broker's CreateTopics, an operator), but
brokers hear of it only from the controller's UpdateMetadata a moment later, and not all at the
same moment. Until then a broker's Metadata says UNKNOWN_TOPIC_OR_PARTITION, or names no
leader. Kafka's clients wait for metadata (``max.block.ms``) rather than fail; the gateway does
the same, but only for a topic ZooKeeper says exists and is not being deleted, so a topic that
really does not exist is still refused at once. The wait is bounded by
``PAFKA_GATEWAY_METADATA_WAIT_MS``; past it the answer is 503 (retriable), not 404: the topic
does exist. A gateway without ZooKeeper cannot tell, and refuses an unknown topic at once.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from pafka.client.cluster import PartitionLeader, TopicInfo
from pafka.errors import LeaderNotAvailableError, RestError, UnknownTopicOrPartitionError
from pafka.zk.znodes import DeleteTopicZNode, TopicZNode
from services.gateway.context import GatewayContext
from services.gateway.errors import UNKNOWN_PARTITION, UNKNOWN_TOPIC

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.05
MAX_BACKOFF_S = 0.5


@dataclass(frozen=True)
class ZkTopic:
    """What ZooKeeper says of a topic: its partitions, and whether deletion was asked."""

    partitions: frozenset[int]
    being_deleted: bool


def worth_waiting(zk_topic: ZkTopic | None, partition: int | None) -> bool:
    """Whether brokers will come to know the topic (and ``partition``, when one is named)."""
    if zk_topic is None or zk_topic.being_deleted:
        return False
    return partition is None or partition in zk_topic.partitions


def complete(info: TopicInfo | None, partition: int | None) -> bool:
    """Whether metadata has what a request needs: the topic, and ``partition`` when named.
    (A partition without a leader is complete: the producer and the reads wait for leaders.)"""
    if info is None or not info.partitions:
        return False
    return partition is None or partition in info.partitions


def backoff_s(attempt: int) -> float:
    return min(FIRST_BACKOFF_S * 2**attempt, MAX_BACKOFF_S)


async def _zk_topic(ctx: GatewayContext, topic: str) -> ZkTopic | None:
    if ctx.zk is None:
        return None
    node, deleting = await ctx.zk.get_many([TopicZNode.path(topic), DeleteTopicZNode.path(topic)])
    if node is None:
        return None
    partitions = TopicZNode.decode(topic, node[0]).partitions
    return ZkTopic(frozenset(partitions), deleting is not None)


async def _lookup(ctx: GatewayContext, topic: str, refresh: bool) -> TopicInfo | None:
    try:
        return await ctx.cluster.topic(topic, refresh=refresh)
    except UnknownTopicOrPartitionError:
        return None


async def topic_info(
    ctx: GatewayContext, topic: str, *, refresh: bool, partition: int | None = None
) -> TopicInfo:
    """The topic's metadata (holding ``partition`` when one is named), refreshed and awaited
    while ZooKeeper says the brokers are about to learn of it."""
    info = await _lookup(ctx, topic, refresh)
    if complete(info, partition):
        assert info is not None
        return info
    if not refresh:  # the cache may be behind what any broker knows
        info = await _lookup(ctx, topic, True)
    if not complete(info, partition) and worth_waiting(await _zk_topic(ctx, topic), partition):
        info = await _wait(ctx, topic, partition)
    if info is None or not info.partitions:
        raise RestError(UNKNOWN_TOPIC, f"topic {topic!r} does not exist")
    return info


async def _wait(ctx: GatewayContext, topic: str, partition: int | None) -> TopicInfo:
    wait_ms = ctx.settings.metadata_wait_ms
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_ms / 1000
    attempt = 0
    while True:
        pause = backoff_s(attempt)
        if loop.time() + pause > deadline:
            what = topic if partition is None else f"{topic}-{partition}"
            raise LeaderNotAvailableError(
                f"{what} exists in ZooKeeper but is not yet in the brokers' metadata after "
                f"{wait_ms} ms (PAFKA_GATEWAY_METADATA_WAIT_MS); retry"
            )
        await asyncio.sleep(pause)
        attempt += 1
        info = await _lookup(ctx, topic, True)
        if complete(info, partition):
            assert info is not None
            if attempt > 1:
                log.info("metadata of new topic %s arrived after %d refreshes", topic, attempt)
            return info


async def partition_state(
    ctx: GatewayContext, topic: str, partition: int, *, refresh: bool = False
) -> PartitionLeader:
    """The partition's metadata; a partition the metadata lacks is looked up again (it may
    have just been added) and awaited while ZooKeeper has it, before it is called unknown."""
    info = await topic_info(ctx, topic, refresh=refresh, partition=partition)
    found = info.partitions.get(partition)
    if found is None:
        raise RestError(
            UNKNOWN_PARTITION,
            f"topic {topic!r} has no partition {partition} (it has {len(info.partitions)})",
        )
    return found
