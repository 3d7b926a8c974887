"""Followers copy their leaders' logs with Fetch requests, one connection per source broker.

Before fetching a partition for the first time in a leader epoch, the follower asks the leader
where its own latest epoch ends (OffsetForLeaderEpoch, KIP-101/279) and truncates to that, so a
log that diverged under an earlier leader converges instead of keeping records the new leader
never had. Then it appends exactly the leader's bytes and takes the leader's high watermark.

Fetches run in a fetch session (KIP-227, ``follower_session``): once the leader holds the
session, a request names only the partitions whose position changed, so an idle follower costs
one small request per ``replica.fetch.wait.max.ms`` whatever the partition count. An error on
one partition holds back only that partition (``follower_state``); the loop never sleeps on
behalf of a single partition.

Every network wait has a deadline (``pafka.net``): the connection is set up within
``socket.connection.setup.timeout.ms`` by fresh SYNs every second (a healed partition is found
within about a second, not at the kernel's next retransmission), and each request is answered
within ``replica.socket.timeout.ms`` or the connection is dropped and made again after Kafka's
exponential ``reconnect.backoff.ms``. A failure is logged once, its recovery once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import struct
import time
from dataclasses import dataclass, field

from pafka.client.connection import RETIRE_FRACTION
from pafka.client.secure_connect import secure_connection
from pafka.control.messages import LiveBroker
from pafka.errors import (
    BrokerUnreachableError,
    OffsetOutOfRangeError,
    PafkaError,
    ProtocolError,
    for_code,
)
from pafka.net.deadlines import DEFAULT_DEADLINES, NetworkDeadlines
from pafka.net.sockets import SYN_PROBE_INTERVAL_S, Backoff
from pafka.protocol.messages import decode_response, encode_request, request_class
from pafka.protocol.versions import ApiKey
from pafka.security.client_security import ClientSecurity
from services.broker.follower_session import (
    INITIAL_EPOCH,
    FollowerSession,
    PartitionRequest,
    SessionRequest,
)
from services.broker.follower_state import FetchStates, TopicPartition
from services.broker.partition import Partition

log = logging.getLogger(__name__)

FETCH_VERSION = 12
EPOCH_VERSION = 4
LIST_OFFSETS_VERSION = 4
EARLIEST = -2


INTER_BROKER_PLAINTEXT = ClientSecurity(listener="PLAINTEXT")


def leader_address(leader: LiveBroker, security: ClientSecurity) -> tuple[str, int] | None:
    return leader.address(security.listener or "PLAINTEXT")


@dataclass(frozen=True)
class FetcherSettings:
    broker_id: int
    max_wait_ms: int
    partition_max_bytes: int
    response_max_bytes: int
    backoff_ms: int
    network: NetworkDeadlines = DEFAULT_DEADLINES
    # How to reach leaders: their inter-broker listener, secured as it requires.
    security: ClientSecurity = INTER_BROKER_PLAINTEXT


@dataclass
class FollowerLink:
    """Fetches every partition this broker follows from one leader broker."""

    settings: FetcherSettings
    leader: LiveBroker
    partitions: dict[TopicPartition, Partition] = field(default_factory=dict)
    states: FetchStates = field(default_factory=FetchStates)
    session: FollowerSession = field(default_factory=FollowerSession)
    # What the next fetch asks of each fetching partition, kept current as partitions change,
    # and which entries changed since the last request.
    requests: dict[TopicPartition, PartitionRequest] = field(default_factory=dict)
    touched: set[TopicPartition] = field(default_factory=set)
    # Answered OFFSET_OUT_OF_RANGE: the next truncation also asks where the leader's log starts.
    out_of_range: set[TopicPartition] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    correlation_id: int = 0
    # Failed connections (or requests) since the leader last answered.
    reconnect: Backoff = field(init=False)
    failing_since: float | None = None
    # When the current connection's SASL session nears its end (monotonic; inf: never).
    retire_at: float = math.inf

    def __post_init__(self) -> None:
        network = self.settings.network
        self.reconnect = Backoff(network.reconnect_backoff_ms, network.reconnect_backoff_max_ms)

    @property
    def backoff_s(self) -> float:
        return self.settings.backoff_ms / 1000

    def add(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        self.partitions[key] = partition
        self.states.add(key)
        self._refresh(key)
        self.wake.set()

    def remove(self, key: TopicPartition) -> None:
        self.partitions.pop(key, None)
        self.states.remove(key)
        self._refresh(key)

    def _refresh(self, key: TopicPartition) -> None:
        """Re-read what the next fetch asks of ``key`` (its state or its log changed)."""
        self.touched.add(key)
        partition = self.partitions.get(key)
        if partition is None or not self.states.fetching(key):
            self.requests.pop(key, None)
            return
        self.requests[key] = PartitionRequest(
            partition.log.log_end_offset,
            partition.log.log_start_offset,
            partition.leader_epoch,
            self.settings.partition_max_bytes,
        )

    async def run(self) -> None:
        while True:
            if not self.partitions:
                self.wake.clear()
                await self.wake.wait()
            if self.reconnect.failures:
                await asyncio.sleep(self.reconnect.delay_ms(random.random()) / 1000)
            try:
                reader, writer = await self._connect()
            except (OSError, PafkaError) as exc:
                self._connection_failed(f"cannot reach leader {self.leader.id}: {exc}")
                continue
            # A session lives in the leader's memory; a new connection may meet a new process.
            self.session.reset()
            try:
                await self._replicate(reader, writer)
            except (OSError, asyncio.IncompleteReadError, ProtocolError) as exc:
                self._connection_failed(f"fetching from leader {self.leader.id} failed: {exc}")
            except Exception:
                # Never let one bad response end replication from this leader for good; a bug
                # that recurs on every answer retries at the fetch backoff, not in a tight loop.
                log.exception("fetcher for leader %d failed", self.leader.id)
                await asyncio.sleep(self.backoff_s)
            finally:
                writer.close()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        network = self.settings.network
        security = self.settings.security
        address = leader_address(self.leader, security)
        if address is None:
            raise BrokerUnreachableError(
                f"leader {self.leader.id} has no {security.listener} listener"
            )
        reader, writer, lifetime_ms = await secure_connection(
            *address,
            security,
            client_id=f"broker-{self.settings.broker_id}-fetcher",
            setup_timeout_s=network.connection_setup_timeout_ms / 1000,
            probe_interval_s=SYN_PROBE_INTERVAL_S,
            keepalive=network.keepalive,
            user_timeout_ms=network.replica_socket_timeout_ms,
        )
        # A bounded SASL session: reconnect (authenticating afresh) before the leader ends it.
        self.retire_at = (
            time.monotonic() + lifetime_ms * RETIRE_FRACTION / 1000 if lifetime_ms else math.inf
        )
        return reader, writer

    def _connection_failed(self, reason: str) -> None:
        """One line when a leader stops answering; retries stay quiet until it answers."""
        if not self.reconnect.failures:
            self.failing_since = time.monotonic()
            log.warning("%s; reconnecting", reason)
        else:
            log.debug("%s (attempt %d)", reason, self.reconnect.failures + 1)
        self.reconnect = self.reconnect.failed()

    def _answered(self) -> None:
        if self.reconnect.failures:
            log.info(
                "leader %d answers again after %d failed attempts (%.1fs)",
                self.leader.id,
                self.reconnect.failures,
                time.monotonic() - (self.failing_since or time.monotonic()),
            )
            self.reconnect = self.reconnect.succeeded()
            self.failing_since = None

    async def _replicate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while self.partitions and time.monotonic() < self.retire_at:
            truncating = self.states.due_truncations(time.monotonic())
            if truncating:
                await self._truncate(reader, writer, truncating)
            if self.requests or self.session.sent:
                await self._fetch(reader, writer)
            elif not truncating:
                await self._wait_for_due()

    async def _wait_for_due(self) -> None:
        """Every partition is held back: sleep until the first is due or one is (re)added."""
        due_s = self.states.next_due_s()
        self.wake.clear()
        timeout_s = None if due_s is None else max(due_s - time.monotonic(), 0.0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await self.wake.wait()

    async def _call(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        api: ApiKey,
        version: int,
        body: object,
    ) -> object:
        """One request and its answer within ``replica.socket.timeout.ms``; past it the
        connection is useless (a late answer would be read as the next one's)."""
        self.correlation_id += 1
        client_id = f"replica-{self.settings.broker_id}"
        timeout_ms = self.settings.network.replica_socket_timeout_ms
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                writer.write(encode_request(api, version, body, self.correlation_id, client_id))
                await writer.drain()
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                payload = await reader.readexactly(size)
        except TimeoutError:
            raise TimeoutError(f"{api.name} unanswered within {timeout_ms} ms") from None
        response = decode_response(api, version, payload)
        self._answered()
        return response

    async def _truncate(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        keys: list[TopicPartition],
    ) -> None:
        cls = request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)[EPOCH_VERSION]
        topics: dict[str, list[object]] = {}
        asked = {key: self.partitions[key] for key in keys}
        for (topic, index), p in asked.items():
            topics.setdefault(topic, []).append(
                cls.OffsetForLeaderTopic.OffsetForLeaderPartition(
                    partition=index,
                    current_leader_epoch=p.leader_epoch,
                    leader_epoch=p.log.epochs.latest_epoch,
                )
            )
        body = cls(
            replica_id=self.settings.broker_id,
            topics=[cls.OffsetForLeaderTopic(topic=t, partitions=ps) for t, ps in topics.items()],
        )
        response = await self._call(
            reader, writer, ApiKey.OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body
        )
        now_s = time.monotonic()
        for t in response.topics:  # type: ignore[attr-defined]
            for r in t.partitions:
                key = (t.topic, r.partition)
                partition = asked.get(key)
                if partition is None or self.partitions.get(key) is not partition:
                    continue  # moved or re-added while we asked
                if r.error_code:
                    self._failed(partition, "OffsetForLeaderEpoch", r.error_code, now_s)
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
                self.states.ready(key)
                self._refresh(key)
        behind = [k for k in keys if k in self.out_of_range and self.partitions.get(k) is asked[k]]
        if behind:
            await self._start_at_leader_start(reader, writer, behind)

    async def _start_at_leader_start(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keys: list[TopicPartition]
    ) -> None:
        """Kafka's answer to a fetch below the leader's log start (DeleteRecords or retention
        moved it past this follower's end): ask the leader where its log starts and, if this
        log ends before that, start over there, empty."""
        cls = request_class(ApiKey.LIST_OFFSETS)[LIST_OFFSETS_VERSION]
        topics: dict[str, list[object]] = {}
        for topic, index in keys:
            topics.setdefault(topic, []).append(
                cls.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=index,
                    current_leader_epoch=self.partitions[(topic, index)].leader_epoch,
                    timestamp=EARLIEST,
                )
            )
        body = cls(
            replica_id=self.settings.broker_id,
            isolation_level=0,
            topics=[cls.ListOffsetsTopic(name=t, partitions=ps) for t, ps in topics.items()],
        )
        response = await self._call(reader, writer, ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, body)
        for t in response.topics:  # type: ignore[attr-defined]
            for r in t.partitions:
                key = (t.name, r.partition_index)
                self.out_of_range.discard(key)
                partition = self.partitions.get(key)
                if partition is None or r.error_code:
                    continue
                if partition.log.log_end_offset < r.offset:
                    log.warning(
                        "%r: the leader's log starts at %d, past this log's end %d: starting there",
                        partition,
                        r.offset,
                        partition.log.log_end_offset,
                    )
                    partition.truncate_fully_and_start_at(r.offset)
                    self._refresh(key)

    def _failed(self, partition: Partition, request: str, error_code: int, now_s: float) -> None:
        """The leader answered ``request`` for this partition with an error: hold it back."""
        log.info(
            "%r: leader answered %s with %s",
            partition,
            request,
            type(for_code(error_code)).__name__,
        )
        key = (partition.topic, partition.index)
        self.states.failed(key, error_code, now_s, self.backoff_s)
        self._refresh(key)

    async def _fetch(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.session.next_epoch == INITIAL_EPOCH:
            # A full request: every entry afresh (the log start may have moved by retention).
            for key in list(self.requests):
                self._refresh(key)
        request = self.session.build(self.requests, self.touched)
        self.touched = set()
        response = await self._call(
            reader, writer, ApiKey.FETCH, FETCH_VERSION, self._fetch_body(request)
        )
        error_code = int(response.error_code)  # type: ignore[attr-defined]
        self.session.on_response(request, error_code, int(response.session_id))  # type: ignore[attr-defined]
        if error_code:
            log.info(
                "leader %d ended the fetch session: %s",
                self.leader.id,
                type(for_code(error_code)).__name__,
            )
            return
        now_s = time.monotonic()
        for t in response.responses:  # type: ignore[attr-defined]
            for data in t.partitions:
                key = (t.topic, data.partition_index)
                partition = self.partitions.get(key)
                if partition is None or not self.states.fetching(key):
                    continue  # dropped, or re-added for a new leader epoch while we fetched
                if data.error_code:
                    if data.error_code == OffsetOutOfRangeError.code:
                        self.out_of_range.add(key)
                    self._failed(partition, "Fetch", data.error_code, now_s)
                    continue
                try:
                    partition.append_as_follower(
                        data.records or b"", data.high_watermark, data.log_start_offset
                    )
                except PafkaError as exc:
                    # Diverged or damaged: find the common point with the leader again.
                    log.warning("%r: follower append failed: %s", partition, exc)
                    self.states.diverged(key)
                    self._refresh(key)
                    continue
                if data.records:
                    self._refresh(key)

    def _fetch_body(self, request: SessionRequest) -> object:
        cls = request_class(ApiKey.FETCH)[FETCH_VERSION]
        topics: dict[str, list[object]] = {}
        for (topic, index), r in request.partitions.items():
            topics.setdefault(topic, []).append(
                cls.FetchTopic.FetchPartition(
                    partition=index,
                    current_leader_epoch=r.current_leader_epoch,
                    fetch_offset=r.fetch_offset,
                    log_start_offset=r.log_start_offset,
                    partition_max_bytes=r.max_bytes,
                )
            )
        forgotten: dict[str, list[int]] = {}
        for topic, index in request.forgotten:
            forgotten.setdefault(topic, []).append(index)
        return cls(
            replica_id=self.settings.broker_id,
            max_wait_ms=self.settings.max_wait_ms,
            min_bytes=1,
            max_bytes=self.settings.response_max_bytes,
            isolation_level=0,
            session_id=request.session_id,
            session_epoch=request.session_epoch,
            topics=[cls.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
            forgotten_topics_data=[
                cls.ForgottenTopic(topic=t, partitions=ps) for t, ps in forgotten.items()
            ],
            rack_id="",
        )


class FollowerManager:
    """The links of this broker, and which partition follows which leader."""

    def __init__(self, settings: FetcherSettings) -> None:
        self.settings = settings
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
        security = self.settings.security
        if link is not None and leader_address(link.leader, security) != leader_address(
            leader, security
        ):
            self._stop(link)
            link = None
        if link is None:
            link = FollowerLink(self.settings, leader)
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
