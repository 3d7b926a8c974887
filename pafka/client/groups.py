"""Consumer-group membership as a client: the group APIs through the group's coordinator.

:class:`GroupClient` speaks JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch and DescribeGroups to the broker coordinating a group (found with FindCoordinator and
remembered), and ListGroups to every broker. Results are typed values; a wire error code raises
its :mod:`pafka.errors` class. NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_
PROGRESS and a lost connection mean the coordinator moved or is moving: the coordinator is looked
up again and the request retried, a bounded number of times.

JoinGroup and SyncGroup wait at the coordinator until the whole group has joined or synced, so
they go over a connection of their own (:meth:`ClusterClient.exclusive`): a broker answers each
connection in order, and a parked join would hold up every request behind it.

The whole "consumer" protocol round built on these calls (join, the leader's assignment, sync,
rejoin while rebalancing) is :func:`pafka.client.group_join.join_consumer`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pafka.client.cluster import ClusterClient
from pafka.errors import (
    BrokerConnectionError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaApiError,
    MemberIdRequiredError,
    NotCoordinatorError,
    ProtocolError,
    RebalanceInProgressError,
    RequestTimedOutError,
    UnknownMemberIdError,
    for_code,
)
from pafka.groups.consumer_protocol import PROTOCOL_TYPE, TopicPartition, decode_assignment
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

log = logging.getLogger(__name__)

T = TypeVar("T")

JOIN_VERSION = 7  # v4+: MEMBER_ID_REQUIRED; v5+: group instance ids; v7: protocol type back
SYNC_VERSION = 5
HEARTBEAT_VERSION = 4
LEAVE_VERSION = 4
COMMIT_VERSION = 8
FETCH_VERSION = 7
DESCRIBE_VERSION = 5
LIST_VERSION = 4

NO_GENERATION = -1
NO_OFFSET = -1
# How long past the rebalance timeout a parked JoinGroup/SyncGroup is waited for.
PARKED_MARGIN_S = 30.0
MAX_CACHED_COORDINATORS = 4096
# Errors that say "ask the coordinator again", possibly after finding it again.
_MOVED = (NotCoordinatorError, CoordinatorNotAvailableError, BrokerConnectionError)
# Errors an OffsetCommit puts on every partition when the whole request is refused.
_GROUP_LEVEL = (
    UnknownMemberIdError,
    IllegalGenerationError,
    RebalanceInProgressError,
    FencedInstanceIdError,
)


@dataclass(frozen=True)
class JoinedMember:
    """A member as the leader's JoinGroup answer lists it."""

    member_id: str
    instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    member_id: str
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str
    members: tuple[JoinedMember, ...] = ()
    """Every member with its metadata, in the leader's answer only."""

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    metadata: str | None = None
    leader_epoch: int = -1


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes

    def assigned_partitions(self) -> frozenset[TopicPartition]:
        """The member's partitions, for the "consumer" protocol (empty until the group is
        Stable, or when the assignment is not the consumer protocol's)."""
        try:
            return decode_assignment(self.assignment).partitions
        except ProtocolError:  # another protocol's bytes
            return frozenset()


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...]


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    coordinator: int


def _error(code: int, what: str) -> KafkaApiError:
    name = type(for_code(code)).__doc__ or f"error code {code}"
    return for_code(code, f"{what}: {name.strip()}")


class GroupClient:
    def __init__(
        self, cluster: ClusterClient, *, retries: int = 8, retry_backoff_s: float = 0.25
    ) -> None:
        self.cluster = cluster
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self._coordinators: OrderedDict[str, int] = OrderedDict()

    # -- finding the coordinator -------------------------------------------------------------

    async def coordinator(self, group: str, *, refresh: bool = False) -> int:
        """The broker id coordinating ``group`` (remembered until it stops being so)."""
        if not refresh and group in self._coordinators:
            self._coordinators.move_to_end(group)
            return self._coordinators[group]
        broker_id = await self.cluster.coordinator(group)
        self._coordinators[group] = broker_id
        while len(self._coordinators) > MAX_CACHED_COORDINATORS:
            self._coordinators.popitem(last=False)
        return broker_id

    async def _at_coordinator(self, group: str, attempt: Callable[[int], Awaitable[T]]) -> T:
        """Run ``attempt(broker_id)`` at the coordinator, finding it again while it moves."""
        refresh = False
        for tries in range(self.retries + 1):
            try:
                return await attempt(await self.coordinator(group, refresh=refresh))
            except (*_MOVED, CoordinatorLoadInProgressError) as exc:
                if tries >= self.retries:
                    raise
                refresh = isinstance(exc, _MOVED)
                log.debug("group %r: %s; retrying", group, exc)
                await asyncio.sleep(min(self.retry_backoff_s * (tries + 1), 2.0))
        raise AssertionError("unreachable")

    async def _exclusive_call(
        self, broker_id: int, api: ApiKey, version: int, body: Any, timeout_s: float
    ) -> Any:
        async with self.cluster.exclusive(broker_id) as connection:
            try:
                return await connection.call(api, version, body, timeout_s=timeout_s)
            except BrokerConnectionError as exc:
                if isinstance(exc.__cause__, TimeoutError):
                    message = f"{api.name} got no answer in {timeout_s:.0f} s"
                    raise RequestTimedOutError(message) from exc
                raise

    # -- membership --------------------------------------------------------------------------

    async def join(
        self,
        group: str,
        protocols: Sequence[tuple[str, bytes]],
        *,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        member_id: str = "",
        instance_id: str | None = None,
        protocol_type: str = PROTOCOL_TYPE,
    ) -> JoinResult:
        """JoinGroup, waiting until the rebalance completes. A new member (no ``member_id``)
        is first handed its id with MEMBER_ID_REQUIRED and joins again with it here."""
        cls = request_class(ApiKey.JOIN_GROUP)[JOIN_VERSION]
        timeout_s = rebalance_timeout_ms / 1000 + PARKED_MARGIN_S

        async def attempt(broker_id: int) -> JoinResult:
            nonlocal member_id
            for _ in range(2):
                body = cls(
                    group_id=group,
                    session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=rebalance_timeout_ms,
                    member_id=member_id,
                    group_instance_id=instance_id,
                    protocol_type=protocol_type,
                    protocols=[
                        cls.JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols
                    ],
                )
                r = await self._exclusive_call(
                    broker_id, ApiKey.JOIN_GROUP, JOIN_VERSION, body, timeout_s
                )
                if r.error_code == MemberIdRequiredError.code and not member_id:
                    member_id = r.member_id
                    continue
                if r.error_code:
                    raise _error(r.error_code, f"JoinGroup of {group!r}")
                return JoinResult(
                    member_id=r.member_id,
                    generation=r.generation_id,
                    protocol_type=r.protocol_type,
                    protocol=r.protocol_name,
                    leader=r.leader,
                    members=tuple(
                        JoinedMember(m.member_id, m.group_instance_id, bytes(m.metadata))
                        for m in r.members
                    ),
                )
            raise _error(MemberIdRequiredError.code, f"JoinGroup of {group!r} twice")

        return await self._at_coordinator(group, attempt)

    async def sync(
        self,
        group: str,
        generation: int,
        member_id: str,
        *,
        assignments: Mapping[str, bytes] | None = None,
        instance_id: str | None = None,
        protocol: str | None = None,
        protocol_type: str = PROTOCOL_TYPE,
        timeout_s: float = PARKED_MARGIN_S * 2,
    ) -> bytes:
        """SyncGroup: the leader sends every member's assignment, everyone gets their own."""
        cls = request_class(ApiKey.SYNC_GROUP)[SYNC_VERSION]
        body = cls(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            protocol_type=protocol_type,
            protocol_name=protocol,
            assignments=[
                cls.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )

        async def attempt(broker_id: int) -> bytes:
            r = await self._exclusive_call(
                broker_id, ApiKey.SYNC_GROUP, SYNC_VERSION, body, timeout_s
            )
            if r.error_code:
                raise _error(r.error_code, f"SyncGroup of {group!r}")
            return bytes(r.assignment or b"")

        return await self._at_coordinator(group, attempt)

    async def heartbeat(
        self, group: str, generation: int, member_id: str, instance_id: str | None = None
    ) -> None:
        """Raises RebalanceInProgressError when the member must rejoin."""
        cls = request_class(ApiKey.HEARTBEAT)[HEARTBEAT_VERSION]
        body = cls(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        )

        async def attempt(broker_id: int) -> None:
            r = await self.cluster.call(broker_id, ApiKey.HEARTBEAT, HEARTBEAT_VERSION, body)
            if r.error_code:
                raise _error(r.error_code, f"Heartbeat of {member_id} in {group!r}")

        await self._at_coordinator(group, attempt)

    async def leave(self, group: str, member_id: str, instance_id: str | None = None) -> None:
        cls = request_class(ApiKey.LEAVE_GROUP)[LEAVE_VERSION]
        body = cls(
            group_id=group,
            members=[cls.MemberIdentity(member_id=member_id, group_instance_id=instance_id)],
        )

        async def attempt(broker_id: int) -> None:
            r = await self.cluster.call(broker_id, ApiKey.LEAVE_GROUP, LEAVE_VERSION, body)
            code = r.error_code or next((m.error_code for m in r.members if m.error_code), 0)
            if code:
                raise _error(code, f"LeaveGroup of {member_id} from {group!r}")

        await self._at_coordinator(group, attempt)

    # -- offsets -----------------------------------------------------------------------------

    async def commit(
        self,
        group: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        generation: int = NO_GENERATION,
        member_id: str = "",
        instance_id: str | None = None,
    ) -> dict[TopicPartition, KafkaApiError | None]:
        """OffsetCommit; the outcome per partition (None: committed).

        A member commits with its generation and id, and only partitions it owns; without
        them (generation -1) a commit is accepted only while the group has no members. When the
        coordinator refuses the whole request (unknown member, stale generation, rebalancing)
        that error is raised.
        """
        cls = request_class(ApiKey.OFFSET_COMMIT)[COMMIT_VERSION]
        topic_cls = cls.OffsetCommitRequestTopic
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), entry in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                topic_cls.OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=entry.offset,
                    committed_leader_epoch=entry.leader_epoch,
                    committed_metadata=entry.metadata,
                )
            )
        body = cls(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=instance_id,
            topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()],
        )

        async def attempt(broker_id: int) -> dict[TopicPartition, KafkaApiError | None]:
            r = await self.cluster.call(broker_id, ApiKey.OFFSET_COMMIT, COMMIT_VERSION, body)
            codes = {
                (t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions
            }
            what = f"OffsetCommit of {group!r}"
            for code in set(codes.values()):
                if code and isinstance(for_code(code), (*_MOVED, CoordinatorLoadInProgressError)):
                    raise _error(code, what)
            if codes and len(set(codes.values())) == 1:
                (code,) = set(codes.values())
                if code and isinstance(for_code(code), _GROUP_LEVEL):
                    raise _error(code, what)
            return {
                tp: _error(code, f"{what} for {tp[0]}-{tp[1]}") if code else None
                for tp, code in codes.items()
            }

        return await self._at_coordinator(group, attempt)

    async def fetch_offsets(
        self, group: str, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch: the committed offset of each of ``partitions`` (None: not committed),
        or with ``partitions`` None, of every partition the group has committed."""
        cls = request_class(ApiKey.OFFSET_FETCH)[FETCH_VERSION]
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(set(partitions)):
                by_topic.setdefault(topic, []).append(partition)
            topics = [
                cls.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                for t, ps in by_topic.items()
            ]
        body = cls(group_id=group, topics=topics, require_stable=False)

        async def attempt(broker_id: int) -> dict[TopicPartition, OffsetAndMetadata | None]:
            r = await self.cluster.call(broker_id, ApiKey.OFFSET_FETCH, FETCH_VERSION, body)
            if r.error_code:
                raise _error(r.error_code, f"OffsetFetch of {group!r}")
            found: dict[TopicPartition, OffsetAndMetadata | None] = {}
            for t in r.topics:
                for p in t.partitions:
                    if p.error_code:
                        raise _error(p.error_code, f"OffsetFetch of {group!r} {t.name}")
                    found[(t.name, p.partition_index)] = (
                        OffsetAndMetadata(p.committed_offset, p.metadata, p.committed_leader_epoch)
                        if p.committed_offset >= 0
                        else None
                    )
            return found

        return await self._at_coordinator(group, attempt)

    # -- inspection --------------------------------------------------------------------------

    async def describe(self, group: str) -> GroupDescription:
        """DescribeGroups; a group the coordinator does not know is in state "Dead"."""
        cls = request_class(ApiKey.DESCRIBE_GROUPS)[DESCRIBE_VERSION]
        body = cls(groups=[group], include_authorized_operations=False)

        async def attempt(broker_id: int) -> GroupDescription:
            r = await self.cluster.call(broker_id, ApiKey.DESCRIBE_GROUPS, DESCRIBE_VERSION, body)
            (g,) = r.groups
            if g.error_code:
                raise _error(g.error_code, f"DescribeGroups of {group!r}")
            return GroupDescription(
                group_id=g.group_id,
                state=g.group_state,
                protocol_type=g.protocol_type,
                protocol=g.protocol_data,
                members=tuple(
                    DescribedMember(
                        member_id=m.member_id,
                        instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        metadata=bytes(m.member_metadata or b""),
                        assignment=bytes(m.member_assignment or b""),
                    )
                    for m in g.members
                ),
            )

        return await self._at_coordinator(group, attempt)

    async def list(self) -> list[ListedGroup]:
        """ListGroups at every live broker: every group some broker coordinates."""
        cls = request_class(ApiKey.LIST_GROUPS)[LIST_VERSION]
        found: dict[str, ListedGroup] = {}
        for broker_id in sorted(self.cluster.brokers):
            r = await self.cluster.call(
                broker_id, ApiKey.LIST_GROUPS, LIST_VERSION, cls(states_filter=[])
            )
            if r.error_code:
                raise _error(r.error_code, f"ListGroups at broker {broker_id}")
            for g in r.groups:
                found.setdefault(
                    g.group_id, ListedGroup(g.group_id, g.protocol_type, g.group_state, broker_id)
                )
        return sorted(found.values(), key=lambda g: g.group_id)
