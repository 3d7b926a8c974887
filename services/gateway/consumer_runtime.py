"""What a REST consumer instance does on the brokers: membership, positions, reads, commits.

The instance itself lives in ZooKeeper (:mod:`services.gateway.consumer_instance_store`); each
request loads it, acts, and writes back what changed through the store's conditional update,
so the request may reach any gateway replica.

* **Membership.** A subscribed instance is a real member of its group, in the "consumer"
  protocol with the range assignor (:func:`pafka.client.group_join.join_consumer`). It joins
  when it has no member id or was told to rejoin, and heartbeats on every request otherwise; a
  heartbeat that says "rebalancing" or "stale generation" makes it rejoin with its id, "unknown
  member" as a new member. Its session timeout is the instance timeout (within Kafka's default
  bounds), so an idle instance and its membership expire together. The rebalance timeout is
  the gateway's longest poll: a join waits at most that long for the group's other members to
  come back.
* **Positions.** A partition without a position starts at the group's committed offset, else
  at ``auto.offset.reset``; an offset that fell out of the log is reset the same way.
* **Reads.** Every assigned partition is fetched at once without waiting; if nothing came,
  all are long-polled together until the first answers with records or the timeout passes
  (:mod:`services.gateway.consumer_reads`). Positions move only where no one moved them
  meanwhile, and only records whose move was written are returned: two concurrent reads of one
  instance never return the same records.
* **Commits.** With auto commit, a read first commits the positions reached by earlier reads
  (what the client has already received), as Kafka's consumer commits on poll, and so do a
  rejoin and a delete.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pafka.client.cluster import ClusterClient
from pafka.client.group_join import ConsumerMembership, join_consumer
from pafka.client.groups import GroupClient, OffsetAndMetadata
from pafka.errors import (
    IllegalGenerationError,
    KafkaApiError,
    PafkaError,
    RebalanceInProgressError,
    RestError,
    UnknownMemberIdError,
    ZkBadVersionError,
)
from pafka.groups.consumer_protocol import TopicPartition
from services.gateway.consumer_instance_store import InstanceStore, Sweeper, expire
from services.gateway.consumer_instances import EARLIEST, InstanceState, now_ms
from services.gateway.consumer_reads import (
    PartitionReader,
    Render,
    rendered,
    reset_positions,
    trim,
)
from services.gateway.errors import ILLEGAL_STATE, UNKNOWN_CONSUMER_INSTANCE
from services.gateway.settings import GatewaySettings

log = logging.getLogger(__name__)

ASSIGNOR = "range"
# Kafka's default group.min/max.session.timeout.ms: a session outside them is refused.
MIN_SESSION_MS = 6_000
MAX_SESSION_MS = 1_800_000
REBALANCED = (RebalanceInProgressError, IllegalGenerationError)


@dataclass
class ConsumerRuntime:
    """One per gateway: the store, a group client and the settings, shared by all requests."""

    cluster: ClusterClient
    groups: GroupClient
    store: InstanceStore
    settings: GatewaySettings

    def __post_init__(self) -> None:
        self.sweeper = Sweeper(self.store, self.timeout_ms, self.release)

    @property
    def timeout_ms(self) -> int:
        return self.settings.consumer_instance_timeout_ms

    @property
    def touch_every_ms(self) -> int:
        """How stale ``last_used_ms`` may get: a tenth of the timeout, at most a second."""
        return min(self.timeout_ms // 10, 1000)

    @property
    def session_timeout_ms(self) -> int:
        return min(max(self.timeout_ms, MIN_SESSION_MS), MAX_SESSION_MS)

    @property
    def rebalance_timeout_ms(self) -> int:
        return min(self.session_timeout_ms, max(self.settings.max_poll_ms, MIN_SESSION_MS))

    # -- instances -----------------------------------------------------------------------------

    async def open(self, group: str, name: str) -> InstanceState:
        """The instance, marked as used now; 404 when it does not exist or just expired."""
        self.sweeper.start()
        state, version = await self.store.load(group, name)
        if state.expired(now_ms(), self.timeout_ms):
            await expire(self.store, group, name, self.timeout_ms, self.release)
            raise RestError(
                UNKNOWN_CONSUMER_INSTANCE,
                f"consumer instance {name!r} of group {group!r} expired after "
                f"{self.timeout_ms} ms without use",
            )
        every = self.touch_every_ms
        touched = state.touched(now_ms(), every)
        if touched == state:
            return state
        try:
            await self.store.save(touched, version)
            return touched
        except ZkBadVersionError:
            return await self.store.update(group, name, lambda s: s.touched(now_ms(), every))

    async def auto_commit(self, state: InstanceState) -> dict[TopicPartition, int]:
        """With auto commit, commit the positions not committed yet: what was committed."""
        wanted = state.uncommitted() if state.auto_commit else {}
        if not wanted or (state.subscribed and not state.member_id):
            return {}
        try:
            await self.commit(state, wanted)
        except PafkaError as exc:
            log.debug("auto commit of %s/%s failed: %s", state.group, state.name, exc)
            return {}
        return wanted

    async def release(self, state: InstanceState) -> None:
        """Before an instance goes: commit (with auto commit) and leave the group."""
        await self.auto_commit(state)
        if state.member_id:
            with contextlib.suppress(PafkaError):
                await self.groups.leave(state.group, state.member_id)

    # -- membership ----------------------------------------------------------------------------

    async def member(self, state: InstanceState, *, join: bool = True) -> InstanceState:
        """A subscribed instance as a current member (joining if needed and ``join``); an
        instance with a manual assignment as it is."""
        if not state.subscribed:
            return state
        if state.member_id and not state.rejoin:
            try:
                await self.groups.heartbeat(state.group, state.generation, state.member_id)
                return state
            except REBALANCED:
                state = await self._must_rejoin(state, as_new=False)
            except UnknownMemberIdError:
                state = await self._must_rejoin(state, as_new=True)
        return await self._join(state) if join else state

    async def _must_rejoin(self, state: InstanceState, *, as_new: bool) -> InstanceState:
        def change(s: InstanceState) -> InstanceState:
            return s.must_rejoin(as_new=as_new) if s.member_id == state.member_id else s

        return await self.store.update(state.group, state.name, change)

    async def _join(self, state: InstanceState) -> InstanceState:
        # Eager rebalancing gives every partition up: commit what was read first.
        committed = await self.auto_commit(state)
        try:
            joined = await self._join_as(state, state.member_id)
        except UnknownMemberIdError:
            joined = await self._join_as(state, "")
        topics = state.topics

        def change(s: InstanceState) -> InstanceState:
            after = s.marked_committed(committed).joined(
                joined.member_id, joined.generation, joined.partitions
            )
            # Subscribed to other topics meanwhile: join again with those on the next read.
            return after.must_rejoin(as_new=False) if s.topics != topics else after

        return await self.store.update(state.group, state.name, change)

    async def _join_as(self, state: InstanceState, member_id: str) -> ConsumerMembership:
        return await join_consumer(
            self.groups,
            state.group,
            state.topics,
            assignor=ASSIGNOR,
            member_id=member_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
        )

    # -- positions -----------------------------------------------------------------------------

    async def starting_positions(
        self, state: InstanceState, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets, else ``auto.offset.reset``, for ``partitions``."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        committed = await self.groups.fetch_offsets(state.group, wanted)
        found = {tp: c.offset for tp, c in committed.items() if c is not None and tp in wanted}
        rest = [tp for tp in wanted if tp not in found]
        found.update(await self.reset_positions(state, rest, state.auto_offset_reset == EARLIEST))
        return found

    async def reset_positions(
        self, state: InstanceState, partitions: Iterable[TopicPartition], earliest: bool
    ) -> dict[TopicPartition, int]:
        """Each partition's log start (``earliest``) or end, as the instance's isolation level
        sees it."""
        return await reset_positions(self.cluster, partitions, earliest, state.isolation)

    async def seek(
        self, state: InstanceState, offsets: Mapping[TopicPartition, int]
    ) -> InstanceState:
        state.seek(offsets)  # refuses unassigned partitions before anything is written
        return await self.store.update(state.group, state.name, lambda s: s.seek(offsets))

    # -- reading -------------------------------------------------------------------------------

    async def read(
        self,
        state: InstanceState,
        render: Render,
        *,
        timeout_ms: int,
        max_bytes: int,
        may_read: Callable[[Iterable[str]], None] = lambda _topics: None,
    ) -> tuple[InstanceState, list[Any]]:
        """The next records of the instance's partitions, as ``render`` shows them. A record
        ``render`` refuses is not consumed, nor anything after it in its partition; when the
        first record is refused, the refusal is raised. ``may_read`` refuses (raises) topics of
        the assignment the caller may not read."""
        state = await self.member(state)
        may_read({topic for topic, _ in state.assignment})
        committed = await self.auto_commit(state)
        assignment = sorted(state.assignment)
        if not assignment:
            if committed:
                state = await self.store.update(
                    state.group, state.name, lambda s: s.marked_committed(committed)
                )
            return state, []
        start = {tp: o for tp, o in state.positions.items() if tp in state.assignment}
        start.update(await self.starting_positions(state, set(assignment) - set(start)))
        end = dict(start)
        max_records = self.settings.max_records_per_request
        reader = PartitionReader(
            self.cluster, max_records, state.auto_offset_reset == EARLIEST, state.isolation
        )
        fetched = await reader.fetch(start, end, wait_ms=0, max_bytes=max_bytes)
        if not fetched and timeout_ms > 0:
            fetched = await reader.long_poll(start, end, timeout_ms=timeout_ms, max_bytes=max_bytes)
        shown = rendered(trim(fetched, max_bytes, max_records), render)
        for tp, records, _ in shown:
            end[tp] = records[-1].offset + 1
        moved: frozenset[TopicPartition] = frozenset()

        def change(s: InstanceState) -> InstanceState:
            nonlocal moved
            after, moved = s.advanced(start, end)
            return after.marked_committed(committed).touched(now_ms(), self.touch_every_ms)

        saved = await self.store.update(state.group, state.name, change)
        # Only the records whose position move was written: another read may have won.
        return saved, [out for tp, _, outs in shown if tp in moved for out in outs]

    # -- offsets -------------------------------------------------------------------------------

    async def commit(self, state: InstanceState, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit as the group member (subscribed) or as a simple consumer (manual assignment,
        accepted only while the group has no members)."""
        if not offsets:
            return
        if state.subscribed and not state.member_id:
            raise RestError(ILLEGAL_STATE, "the instance has not joined its group yet: read first")
        wanted = {tp: OffsetAndMetadata(o) for tp, o in offsets.items()}
        try:
            outcome = await self.groups.commit(
                state.group,
                wanted,
                generation=state.generation if state.subscribed else -1,
                member_id=state.member_id if state.subscribed else "",
            )
        except (*REBALANCED, UnknownMemberIdError) as exc:
            if state.subscribed:
                await self._must_rejoin(state, as_new=isinstance(exc, UnknownMemberIdError))
                raise RestError(
                    ILLEGAL_STATE,
                    f"the group rebalanced ({exc.message}); read records to rejoin, then commit",
                ) from None
            raise
        failed: list[KafkaApiError] = [e for _, e in sorted(outcome.items()) if e is not None]
        if failed:
            raise failed[0]
