"""The group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and timeouts.

A rebalance collects every known member's JoinGroup (or waits until the rebalance timeout and
drops the missing), starts a new generation, answers all joins (the leader gets the member
list), then waits for the leader's SyncGroup, hands each member its assignment and records the
owners. Requests that must wait are parked as futures on the group; the waiting happens outside
the group's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from pafka.cluster.names import is_valid_topic_name
from pafka.errors import (
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    KafkaApiError,
    PafkaError,
    ProtocolError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from pafka.groups.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from pafka.groups.membership import Member, grant_ownership
from pafka.groups.state import GroupState
from pafka.groups.zk_coordinated import refuse_join
from pafka.zk.znodes import PartitionOwnerZNode
from services.broker.groups.admission import JoinRequest, admit, check_generation, check_member
from services.broker.groups.coordinator import GroupCoordinator
from services.broker.groups.runtime import GroupRuntime, JoinResult, now_ms
from services.broker.groups.store import GroupWrite

log = logging.getLogger(__name__)

S = GroupState


class GroupProtocol:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.config = coordinator.config
        coordinator.prepare_rebalance = self.prepare_rebalance
        coordinator.sweep_group = self.sweep

    # -- JoinGroup ---------------------------------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            raise InvalidSessionTimeoutError(
                f"session timeout {req.session_timeout_ms} ms is outside "
                f"[{cfg.min_session_timeout_ms}, {cfg.max_session_timeout_ms}]"
            )
        if req.protocol_type != PROTOCOL_TYPE or not req.protocols:
            raise InconsistentGroupProtocolError(
                f"protocol type {req.protocol_type!r} is not served; groups use {PROTOCOL_TYPE!r}"
            )
        try:
            subscription = decode_subscription(req.protocols[0][1])
        except ProtocolError as exc:
            raise InconsistentGroupProtocolError(f"undecodable subscription: {exc}") from exc
        rt = await self.coordinator.group(req.group_id, create=True)
        assert rt is not None
        async with rt.lock:
            meta = rt.meta
            if meta.state is S.DEAD:
                raise UnknownMemberIdError(f"group {req.group_id!r} is being unloaded")
            if not meta.members:
                # Only a first member could meet them: ZooKeeper-coordinated clients never
                # join a group that has Kafka-protocol members.
                consumers = await self.coordinator.zk_consumers(req.group_id)
                if consumers:
                    raise refuse_join(req.group_id, consumers)
            if not meta.supports(req.protocol_type, (name for name, _ in req.protocols)):
                raise InconsistentGroupProtocolError(
                    f"no protocol in common with the members of {req.group_id!r}"
                )
            write = rt.write()
            leader = meta.leader
            member, replaced = admit(rt, req, write, self.config.max_size)
            member.protocols = req.protocols
            member.subscription = frozenset(subscription.topics)
            member.reported_owned = subscription.owned_partitions
            member.session_timeout_ms = req.session_timeout_ms
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
            member.last_heard_ms = now_ms()
            if replaced is not None and meta.static_rejoin_keeps_generation():
                # A static member came back: it takes its old place and assignment without a
                # rebalance (KIP-345), which is what static membership is for. A returning
                # leader is told the old leader id, as Kafka does, so it does not assign
                # again: a Stable group would not pass a new assignment on.
                await self.coordinator.apply(rt, write)
                assert leader is not None
                return JoinResult(
                    meta.generation, meta.protocol_type, meta.protocol, leader, member.member_id
                )
            rt.release(meta.released_on_join(member), write)
            await self.coordinator.apply(rt, write)
            if meta.state is not S.PREPARING_REBALANCE:
                self.prepare_rebalance(rt, f"member {member.member_id} joined")
            waiter = rt.park_join(member)
        return await waiter

    # -- the rebalance -----------------------------------------------------------------------

    def prepare_rebalance(self, rt: GroupRuntime, why: str) -> None:
        meta = rt.meta
        if meta.state is S.PREPARING_REBALANCE or meta.state is S.DEAD:
            return
        if meta.state is S.COMPLETING_REBALANCE:
            for member_id in list(rt.sync_waiters):
                rt.answer_sync(member_id, RebalanceInProgressError())
        delay_ms = self.config.initial_rebalance_delay_ms if meta.state is S.EMPTY else 0
        meta.transition(S.PREPARING_REBALANCE)
        log.info("group %r rebalancing (generation %d): %s", rt.group_id, meta.generation, why)
        rt.rebalance_deadline_ms = now_ms() + max(meta.rebalance_timeout_ms(), delay_ms)
        rt.rebalance_task = asyncio.create_task(self._await_joins(rt, delay_ms))

    async def _await_joins(self, rt: GroupRuntime, delay_ms: int) -> None:
        if delay_ms:
            # Kafka's initial delay: wait, and wait again while new members keep arriving.
            while True:
                count = len(rt.meta.members)
                await asyncio.sleep(delay_ms / 1000)
                if len(rt.meta.members) == count or now_ms() >= rt.rebalance_deadline_ms:
                    break
        while True:
            async with rt.lock:
                if rt.meta.state is not S.PREPARING_REBALANCE:
                    return
                if rt.meta.all_joined() or now_ms() >= rt.rebalance_deadline_ms:
                    # On failure the group was dropped and its waiters answered.
                    with contextlib.suppress(KafkaApiError):
                        await self._complete_join(rt)
                    return
                rt.changed.clear()
            remaining_s = max(rt.rebalance_deadline_ms - now_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining_s):
                    await rt.changed.wait()

    async def _complete_join(self, rt: GroupRuntime) -> None:
        meta = rt.meta
        write = rt.write()
        for member_id in meta.not_rejoined():
            log.info("group %r: member %s did not rejoin in time", rt.group_id, member_id)
            rt.remove_member(member_id, write, UnknownMemberIdError("did not rejoin in time"))
        meta.pending_members.clear()
        meta.generation += 1
        if not meta.members:
            meta.protocol = meta.leader = None
            write.set_group(rt.group_node())
            await self.coordinator.apply(rt, write)
            meta.transition(S.EMPTY)
            return
        meta.protocol = meta.select_protocol()
        meta.leader = meta.choose_leader()
        meta.partition_counts = self.coordinator.partition_counts(meta.subscribed_topics())
        rt.leaders = self.coordinator.leaders(meta.partition_counts)
        write.set_group(rt.group_node())
        for member in meta.members.values():
            rt.register(member, write)
        await self.coordinator.apply(rt, write)
        meta.transition(S.COMPLETING_REBALANCE)
        now = now_ms()
        rt.sync_deadline_ms = now + meta.rebalance_timeout_ms()
        everyone = tuple(
            (m.member_id, m.instance_id, m.metadata(meta.protocol)) for m in meta.members.values()
        )
        for member in list(meta.members.values()):
            member.last_heard_ms = now
            member.assignment = b""
            result = JoinResult(
                generation=meta.generation,
                protocol_type=meta.protocol_type,
                protocol=meta.protocol,
                leader=meta.leader,
                member_id=member.member_id,
                members=everyone if member.member_id == meta.leader else (),
            )
            rt.answer_join(member.member_id, result)
        log.info(
            "group %r generation %d: %d member(s), protocol %s, leader %s",
            rt.group_id,
            meta.generation,
            len(meta.members),
            meta.protocol,
            meta.leader,
        )

    # -- SyncGroup ---------------------------------------------------------------------------

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        assignments: dict[str, bytes],
    ) -> bytes:
        rt = await self._existing(group_id)
        async with rt.lock:
            member = self._heard(rt, generation, member_id, instance_id)
            if rt.meta.state is S.STABLE:
                return member.assignment
            waiter = rt.park_sync(member)
            if member_id == rt.meta.leader:
                await self._complete_sync(rt, assignments)
        return await waiter

    async def _complete_sync(self, rt: GroupRuntime, assignments: dict[str, bytes]) -> None:
        meta = rt.meta
        decoded: dict[str, Assignment] = {}
        try:
            for member_id in meta.members:
                decoded[member_id] = decode_assignment(assignments.get(member_id, b""))
        except ProtocolError as exc:
            error = InconsistentGroupProtocolError(f"undecodable assignment: {exc}")
            rt.fail_all(error)
            self.prepare_rebalance(rt, "the leader sent an undecodable assignment")
            return
        # Only partitions of legal topic names can be owned (each becomes a znode); whatever
        # else the leader wrote is handed through untouched, as the opaque assignment it is.
        ownable = {
            m: frozenset(tp for tp in a.partitions if is_valid_topic_name(tp[0]))
            for m, a in decoded.items()
        }
        granted, withheld = grant_ownership(ownable, meta.owners, meta.members)
        write = rt.write()
        for member_id, partitions in granted.items():
            for tp in sorted(partitions):
                if meta.owners.get(tp) != member_id:
                    node = PartitionOwnerZNode(member_id, meta.generation)
                    write.put_owner(tp, node, tp in meta.owners)
                    meta.owners[tp] = member_id
        await self.coordinator.apply(rt, write)
        meta.transition(S.STABLE)
        for member_id, member in meta.members.items():
            given = decoded[member_id]
            mine = granted[member_id] | (given.partitions - ownable[member_id])
            member.assignment = (
                assignments.get(member_id, b"")
                if mine == given.partitions
                else encode_assignment(Assignment(mine, given.user_data, given.version))
            )
            member.last_heard_ms = now_ms()
            rt.answer_sync(member_id, member.assignment)
        if withheld:
            self.prepare_rebalance(rt, "partitions withheld until their owners release them")

    # -- Heartbeat, LeaveGroup, timeouts -----------------------------------------------------

    async def _existing(self, group_id: str) -> GroupRuntime:
        rt = await self.coordinator.group(group_id, create=False)
        if rt is None:
            raise UnknownMemberIdError(f"group {group_id!r} does not exist")
        return rt

    @staticmethod
    def _heard(
        rt: GroupRuntime, generation: int, member_id: str, instance_id: str | None
    ) -> Member:
        """A member of the current generation spoke (SyncGroup, Heartbeat): it is alive, and
        is told when the group is rebalancing."""
        member = check_member(rt, member_id, instance_id)
        check_generation(rt, generation)
        member.last_heard_ms = now_ms()
        if rt.meta.state is S.PREPARING_REBALANCE:
            raise RebalanceInProgressError()
        return member

    async def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> None:
        rt = await self._existing(group_id)
        async with rt.lock:
            self._heard(rt, generation, member_id, instance_id)

    async def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> list[PafkaError | None]:
        rt = await self.coordinator.group(group_id, create=False)
        if rt is None:
            return [UnknownMemberIdError(f"group {group_id!r} does not exist")] * len(members)
        results: list[PafkaError | None] = []
        async with rt.lock:
            write = rt.write()
            for member_id, instance_id in members:
                try:
                    if not member_id and instance_id is not None:
                        found = rt.meta.member_by_instance(instance_id)
                        member_id = found.member_id if found else ""
                    check_member(rt, member_id, instance_id)
                except PafkaError as exc:
                    results.append(exc)
                    continue
                rt.remove_member(member_id, write, UnknownMemberIdError("left the group"))
                results.append(None)
            # Only a departure rebalances: a leave naming nobody must not disturb the group.
            if any(result is None for result in results):
                await self._after_removal(rt, write, "member(s) left")
        return results

    async def _after_removal(self, rt: GroupRuntime, write: GroupWrite, why: str) -> None:
        await self.coordinator.apply(rt, write)
        if rt.meta.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self.prepare_rebalance(rt, why)
        if rt.meta.state is S.PREPARING_REBALANCE and not rt.meta.members:
            # Nobody is left to wait for: the group is Empty when the last leave is answered,
            # as in Kafka, so tools that act on empty groups can follow at once.
            rt.meta.pending_members.clear()
            await self._complete_join(rt)

    async def sweep(self, rt: GroupRuntime) -> None:
        """Expire silent members and pending ids; drop members that never sent SyncGroup."""
        now = now_ms()
        meta = rt.meta
        expired = meta.expired_members(now)
        late_sync = (
            [m.member_id for m in meta.members.values() if not m.awaiting_sync]
            if meta.state is S.COMPLETING_REBALANCE and now > rt.sync_deadline_ms
            else []
        )
        stale_pending = meta.expired_pending(now)
        if not (expired or late_sync or stale_pending):
            return
        async with rt.lock:
            for member_id in meta.expired_pending(now):
                del meta.pending_members[member_id]
                rt.changed.set()
            write = rt.write()
            for member_id in {*meta.expired_members(now), *late_sync} & set(meta.members):
                log.info("group %r: member %s session expired", rt.group_id, member_id)
                rt.remove_member(member_id, write, UnknownMemberIdError("session expired"))
            await self._after_removal(rt, write, "member session(s) expired")
