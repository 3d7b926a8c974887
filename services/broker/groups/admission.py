"""Who may join a group: new member ids, returning members, static members taking their old
place (KIP-345), and the checks every member request passes (known member, current
generation, not a fenced static instance)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from pafka.errors import (
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    MemberIdRequiredError,
    UnknownMemberIdError,
)
from pafka.groups.membership import Member
from pafka.groups.state import GroupState
from pafka.zk.znodes import PartitionOwnerZNode
from services.broker.groups.runtime import GroupRuntime, now_ms
from services.broker.groups.store import GroupWrite

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    # JoinGroup v4+: a new member first gets its id back and joins again with it.
    require_known_member_id: bool


def new_member_id(client_id: str) -> str:
    """``{client_id}-{uuid}`` as Kafka makes them, kept safe to use as a znode name."""
    return f"{_UNSAFE.sub('_', client_id)[:100] or 'member'}-{uuid.uuid4()}"


def check_generation(rt: GroupRuntime, generation: int) -> None:
    if generation != rt.meta.generation:
        raise IllegalGenerationError(
            f"generation {generation} is not {rt.group_id!r}'s current {rt.meta.generation}"
        )


def check_member(rt: GroupRuntime, member_id: str, instance_id: str | None) -> Member:
    member = rt.meta.members.get(member_id)
    if instance_id is not None:
        static = rt.meta.member_by_instance(instance_id)
        if static is not None and static.member_id != member_id:
            raise FencedInstanceIdError(f"instance {instance_id!r} has joined as another member")
    if member is None or rt.meta.state is GroupState.DEAD:
        raise UnknownMemberIdError(f"{member_id!r} is not a member of {rt.group_id!r}")
    return member


def admit(
    rt: GroupRuntime, req: JoinRequest, write: GroupWrite, max_size: int
) -> tuple[Member, Member | None]:
    """The joining member, and the static member it replaces (if any); MemberIdRequiredError
    for a new dynamic member of JoinGroup v4+, which must come back with the id it is given."""
    meta = rt.meta
    if req.member_id:
        member = meta.members.get(req.member_id)
        if member is None and meta.pending_members.pop(req.member_id, None) is not None:
            return _add(rt, req, req.member_id, max_size), None
        return check_member(rt, req.member_id, req.instance_id), None
    if req.instance_id is not None:
        previous = meta.member_by_instance(req.instance_id)
        if previous is not None:
            return _replace_static(rt, previous, req, write, max_size), previous
    member_id = new_member_id(req.client_id)
    if req.require_known_member_id and req.instance_id is None:
        meta.pending_members[member_id] = now_ms() + req.session_timeout_ms
        raise MemberIdRequiredError(member_id)
    return _add(rt, req, member_id, max_size), None


def _add(rt: GroupRuntime, req: JoinRequest, member_id: str, max_size: int) -> Member:
    if len(rt.meta.members) >= max_size:
        raise GroupMaxSizeReachedError(f"group {rt.group_id!r} has {max_size} members")
    if not rt.meta.members:
        rt.meta.protocol_type = req.protocol_type
    member = Member(
        member_id=member_id,
        client_id=req.client_id,
        client_host=req.client_host,
        session_timeout_ms=req.session_timeout_ms,
        rebalance_timeout_ms=req.rebalance_timeout_ms,
        instance_id=req.instance_id,
    )
    rt.meta.members[member_id] = member
    return member


def _replace_static(
    rt: GroupRuntime, previous: Member, req: JoinRequest, write: GroupWrite, max_size: int
) -> Member:
    """A static member restarted: a new member id takes the old one's place, registration,
    ownership and assignment (it is the same consumer); the old id is fenced."""
    meta = rt.meta
    fenced = FencedInstanceIdError(f"instance {req.instance_id!r} was replaced")
    rt.answer_join(previous.member_id, fenced)
    rt.answer_sync(previous.member_id, fenced)
    del meta.members[previous.member_id]
    member = _add(rt, req, new_member_id(req.client_id), max_size)
    member.assignment = previous.assignment
    if previous.member_id in rt.registered:
        write.delete_member(previous.member_id)
    rt.register(member, write)
    for tp in sorted(meta.owned_by(previous.member_id)):
        meta.owners[tp] = member.member_id
        write.put_owner(tp, PartitionOwnerZNode(member.member_id, meta.generation), True)
    if meta.leader == previous.member_id:
        meta.leader = member.member_id
    return member
