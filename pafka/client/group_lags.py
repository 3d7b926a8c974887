"""How far a consumer group trails the logs: its committed offsets against the log ends.

A partition's lag is its log end less the group's committed offset, never negative, and
unknown without either. The log end is the high watermark, or for read_committed consumers the
last stable offset (records of open transactions are not yet theirs to consume). Log ends come
from the partition leaders (ListOffsets, through :func:`pafka.client.fetcher.offsets`), a
bounded number of lookups at once; a partition whose leader cannot answer now is left out, so
that one unreachable leader does not hide the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from pafka.client import fetcher
from pafka.client.cluster import ClusterClient
from pafka.client.groups import DescribedMember
from pafka.client.isolation import IsolationLevel
from pafka.errors import PafkaError
from pafka.groups.consumer_protocol import TopicPartition

MAX_CONCURRENT_LOOKUPS = 16


@dataclass(frozen=True)
class PartitionLag:
    """One partition of a group: committed position (None: nothing committed), log end, owner."""

    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int | None
    owner: DescribedMember | None = None

    @property
    def lag(self) -> int | None:
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return max(self.log_end_offset - self.current_offset, 0)


async def log_end_offsets(
    cluster: ClusterClient,
    partitions: Iterable[TopicPartition],
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[TopicPartition, int]:
    """The end of each partition as ``isolation`` sees it; one whose leader cannot answer is
    left out."""
    wanted = sorted(set(partitions))
    slots = asyncio.Semaphore(MAX_CONCURRENT_LOOKUPS)

    async def end(tp: TopicPartition) -> int | None:
        async with slots:
            try:
                return (await fetcher.offsets(cluster, *tp, isolation))[1]
            except PafkaError:
                return None

    ends = await asyncio.gather(*(end(tp) for tp in wanted))
    return {tp: e for tp, e in zip(wanted, ends, strict=True) if e is not None}
