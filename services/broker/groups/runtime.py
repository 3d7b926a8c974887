"""One group held by this broker: its metadata, the requests parked on it, its ZooKeeper mirror.

Every change to a group happens under its lock, in memory first and then in one fenced
ZooKeeper transaction (:class:`GroupWrite`); if the transaction fails the coordinator drops the
group whole, so memory never disagrees with ZooKeeper for longer than one request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from pafka.errors import KafkaApiError
from pafka.groups.consumer_protocol import TopicPartition
from pafka.groups.membership import GroupMetadata, Member
from pafka.zk.znodes import CommittedOffsetZNode, GroupMemberZNode, GroupZNode
from services.broker.groups.store import Claim, GroupWrite


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass(frozen=True)
class JoinResult:
    generation: int
    protocol_type: str | None
    protocol: str | None
    leader: str
    member_id: str
    # (member id, group instance id, metadata) of every member; the leader's response only.
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass
class GroupRuntime:
    meta: GroupMetadata
    claim: Claim
    offsets: dict[TopicPartition, CommittedOffsetZNode] = field(default_factory=dict)
    # Members whose ids/ znode exists.
    registered: set[str] = field(default_factory=set)
    # Partitions whose offset_commits/ znode exists.
    commit_nodes: set[TopicPartition] = field(default_factory=set)
    # Per-topic parents known to exist under owners/ and offsets/.
    parents: set[str] = field(default_factory=set)
    join_waiters: dict[str, asyncio.Future[JoinResult]] = field(default_factory=dict)
    sync_waiters: dict[str, asyncio.Future[bytes]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Set whenever something a waiting rebalance cares about changed.
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    rebalance_task: asyncio.Task[None] | None = None
    rebalance_deadline_ms: int = 0
    sync_deadline_ms: int = 0
    # Leaders of the subscribed partitions when the generation began.
    leaders: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def group_id(self) -> str:
        return self.meta.group_id

    def write(self) -> GroupWrite:
        return GroupWrite(self.claim)

    # -- parked requests ---------------------------------------------------------------------

    def park_join(self, member: Member) -> asyncio.Future[JoinResult]:
        old = self.join_waiters.pop(member.member_id, None)
        if old is not None and not old.done():
            old.cancel()  # the member asked again; only the newest request gets the answer
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        self.join_waiters[member.member_id] = future
        member.awaiting_join = True
        self.changed.set()
        return future

    def park_sync(self, member: Member) -> asyncio.Future[bytes]:
        old = self.sync_waiters.pop(member.member_id, None)
        if old is not None and not old.done():
            old.cancel()
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.sync_waiters[member.member_id] = future
        member.awaiting_sync = True
        return future

    def answer_join(self, member_id: str, result: JoinResult | KafkaApiError) -> None:
        member = self.meta.members.get(member_id)
        if member is not None:
            member.awaiting_join = False
        _answer(self.join_waiters.pop(member_id, None), result)

    def answer_sync(self, member_id: str, result: bytes | KafkaApiError) -> None:
        member = self.meta.members.get(member_id)
        if member is not None:
            member.awaiting_sync = False
        _answer(self.sync_waiters.pop(member_id, None), result)

    def fail_all(self, error: KafkaApiError) -> None:
        for member_id in list(self.join_waiters):
            self.answer_join(member_id, error)
        for member_id in list(self.sync_waiters):
            self.answer_sync(member_id, error)

    # -- changes to members, recorded in a write ---------------------------------------------

    def register(self, member: Member, write: GroupWrite) -> None:
        node = GroupMemberZNode(
            client_id=member.client_id,
            client_host=member.client_host,
            subscription=tuple(sorted(member.subscription)),
            session_timeout_ms=member.session_timeout_ms,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            group_instance_id=member.instance_id,
        )
        write.put_member(member.member_id, node, member.member_id in self.registered)

    def release(self, partitions: set[TopicPartition], write: GroupWrite) -> None:
        for tp in sorted(partitions):
            del self.meta.owners[tp]
            write.delete_owner(tp)

    def remove_member(self, member_id: str, write: GroupWrite, error: KafkaApiError) -> None:
        """Forget a member that left or timed out: its ownership and registration go too."""
        self.answer_join(member_id, error)
        self.answer_sync(member_id, error)
        self.meta.members.pop(member_id, None)
        self.release(self.meta.owned_by(member_id), write)
        if member_id in self.registered:
            write.delete_member(member_id)
        if self.meta.leader == member_id:
            self.meta.leader = None
        self.changed.set()

    def group_node(self) -> GroupZNode:
        m = self.meta
        return GroupZNode(m.protocol_type, m.generation, m.protocol, m.leader)

    def applied(self, write: GroupWrite) -> None:
        """Bring the mirror of which member znodes exist up to date once ``write`` applied."""
        self.registered -= write.members_deleted
        self.registered |= write.members_put
        self.commit_nodes |= write.commits_put


def _answer(future: asyncio.Future[Any] | None, result: object) -> None:
    if future is None or future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
