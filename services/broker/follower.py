"""Followers copy their leaders' logs with Fetch requests, one connection per source broker.

Before fetching a partition for the first time in a leader epoch, the follower asks the leader
where its own latest epoch ends (OffsetForLeaderEpoch, KIP-101/279) and truncates to that, so a
log that diverged under an earlier leader converges instead of keeping records the new leader
never had. Then it appends exactly the leader's bytes and takes the leader's high watermark.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from dataclasses import dataclass, field

from pafka.control.messages import LiveBroker
from pafka.errors import KafkaApiError, PafkaError, ProtocolError, for_code
from pafka.protocol.messages import decode_response, encode_request, request_class
from pafka.protocol.versions import ApiKey
from services.broker.partition import Partition

log = logging.getLogger(__name__)

FETCH_VERSION = 12
EPOCH_VERSION = 4
RETRY_DELAY_S = 0.5
OFFSET_OUT_OF_RANGE = 1


@dataclass
class FollowerLink:
    """Fetches every partition this broker follows from one leader broker."""

    broker_id: int
    leader: LiveBroker
    max_wait_ms: int
    max_bytes: int
    partitions: dict[tuple[str, int], Partition] = field(default_factory=dict)
    needs_truncation: set[tuple[str, int]] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    correlation_id: int = 0

    def add(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        self.partitions[key] = partition
        self.needs_truncation.add(key)
        self.wake.set()

    def remove(self, key: tuple[str, int]) -> None:
        self.partitions.pop(key, None)
        self.needs_truncation.discard(key)

    async def run(self) -> None:
        while True:
            if not self.partitions:
                self.wake.clear()
                await self.wake.wait()
            try:
                reader, writer = await asyncio.open_connection(self.leader.host, self.leader.port)
            except OSError as exc:
                log.info("cannot reach leader %d: %s", self.leader.id, exc)
                await asyncio.sleep(RETRY_DELAY_S)
                continue
            try:
                while self.partitions:
                    if self.needs_truncation:
                        await self._truncate(reader, writer)
                    await self._fetch(reader, writer)
            except (OSError, asyncio.IncompleteReadError, ProtocolError) as exc:
                log.info("fetching from leader %d failed: %s", self.leader.id, exc)
                await asyncio.sleep(RETRY_DELAY_S)
            except Exception:
                # Never let one bad response end replication from this leader for good.
                log.exception("fetcher for leader %d failed", self.leader.id)
                await asyncio.sleep(RETRY_DELAY_S)
            finally:
                writer.close()

    async def _call(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        api: ApiKey,
        version: int,
        body: object,
    ) -> object:
        self.correlation_id += 1
        writer.write(
            encode_request(api, version, body, self.correlation_id, f"replica-{self.broker_id}")
        )
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        response = decode_response(api, version, await reader.readexactly(size))
        return response

    async def _truncate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        keys = sorted(self.needs_truncation)
        cls = request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)[EPOCH_VERSION]
        topics: dict[str, list[object]] = {}
        for topic, index in keys:
            p = self.partitions[(topic, index)]
            topics.setdefault(topic, []).append(
                cls.OffsetForLeaderTopic.OffsetForLeaderPartition(
                    partition=index,
                    current_leader_epoch=p.leader_epoch,
                    leader_epoch=p.log.epochs.latest_epoch,
                )
            )
        body = cls(
            replica_id=self.broker_id,
            topics=[cls.OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        response = await self._call(
            reader, writer, ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body
        )
        for t in response.topics:  # type: ignore[attr-defined]
            for r in t.partitions:
                key = (t.topic, r.partition)
                partition = self.partitions.get(key)
                if partition is None:
                    continue
                if r.error_code:
                    log.info(
                        "%r: leader refused OffsetForLeaderEpoch: %s",
                        partition,
                        for_code(r.error_code),
                    )
                    continue
                log_end = partition.log.log_end_offset
                if partition.log.epochs.latest_epoch < 0 or r.end_offset < 0:
                    target = min(partition.log.high_watermark, log_end)
                else:
                    target = min(r.end_offset, log_end)
                if target < log_end:
                    log.warning(
                        "%r: truncating %d -> %d to match the leader", partition, log_end, target
                    )
                    partition.truncate_to(target)
                self.needs_truncation.discard(key)
        if self.needs_truncation:
            await asyncio.sleep(RETRY_DELAY_S)

    async def _fetch(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        cls = request_class(ApiKey.FETCH)[FETCH_VERSION]
        topics: dict[str, list[object]] = {}
        ready = {k: p for k, p in self.partitions.items() if k not in self.needs_truncation}
        if not ready:
            return
        for (topic, index), p in ready.items():
            topics.setdefault(topic, []).append(
                cls.FetchTopic.FetchPartition(
                    partition=index,
                    current_leader_epoch=p.leader_epoch,
                    fetch_offset=p.log.log_end_offset,
                    log_start_offset=p.log.log_start_offset,
                    partition_max_bytes=self.max_bytes,
                )
            )
        body = cls(
            replica_id=self.broker_id,
            max_wait_ms=self.max_wait_ms,
            min_bytes=1,
            max_bytes=self.max_bytes,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[cls.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            forgotten_topics_data=[],
            rack_id="",
        )
        response = await self._call(reader, writer, ApiKey.FETCH, FETCH_VERSION, body)
        for t in response.responses:  # type: ignore[attr-defined]
            for data in t.partitions:
                key = (t.topic, data.partition_index)
                partition = ready.get(key)
                if partition is None or self.partitions.get(key) is not partition:
                    continue
                if data.error_code == OFFSET_OUT_OF_RANGE:
                    self.needs_truncation.add(key)
                elif data.error_code:
                    error: KafkaApiError = for_code(data.error_code)
                    log.info("%r: leader answered %s", partition, type(error).__name__)
                    self.needs_truncation.add(key)
                    await asyncio.sleep(RETRY_DELAY_S)
                else:
                    try:
                        partition.append_as_follower(data.records or b"", data.high_watermark)
                    except PafkaError as exc:
                        # Diverged or damaged: find the common point with the leader again.
                        log.warning("%r: follower append failed: %s", partition, exc)
                        self.needs_truncation.add(key)


class FollowerManager:
    """The links of this broker, and which partition follows which leader."""

    def __init__(self, broker_id: int, max_wait_ms: int, max_bytes: int) -> None:
        self.broker_id = broker_id
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.links: dict[int, FollowerLink] = {}
        self.stopped = False

    def follow(self, partition: Partition, leader: LiveBroker) -> None:
        if self.stopped:
            # A broker in controlled shutdown must not catch up and rejoin ISRs it just left.
            return
        key = (partition.topic, partition.index)
        for broker_id, other in self.links.items():
            if broker_id != leader.id:
                other.remove(key)
        link: FollowerLink | None = self.links.get(leader.id)
        if link is not None and (link.leader.host, link.leader.port) != (leader.host, leader.port):
            self._stop(link)
            link = None
        if link is None:
            link = FollowerLink(self.broker_id, leader, self.max_wait_ms, self.max_bytes)
            link.task = asyncio.create_task(link.run())
            self.links[leader.id] = link
        link.add(partition)

    def unfollow(self, topic: str, index: int) -> None:
        for link in self.links.values():
            link.remove((topic, index))

    def _stop(self, link: FollowerLink) -> None:
        if link.task is not None:
            link.task.cancel()
        self.links.pop(link.leader.id, None)

    async def close(self) -> None:
        self.stopped = True
        tasks = [link.task for link in self.links.values() if link.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.links.clear()
