"""Folding queued control requests: a broker applying the folded queue ends where it would
have ended applying every request in order, and nothing is dropped."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from pafka.control.messages import (
    LeaderAndIsr,
    LiveBroker,
    PartitionInfo,
    StopReplica,
    UpdateMetadata,
)
from services.broker.metadata_cache import MetadataCache
from services.controller.request_merging import Message, enqueue

TOPICS = ("a", "b")
PARTITIONS = (0, 1, 2)
BROKER = LiveBroker(1, "h", 9092)


@dataclass
class Replica:
    """What a broker keeps from control requests: hosted partitions and its metadata."""

    hosted: dict[tuple[str, int], PartitionInfo] = field(default_factory=dict)
    deleted: set[tuple[str, int]] = field(default_factory=set)
    metadata: MetadataCache = field(default_factory=MetadataCache)

    def apply(self, message: Message) -> None:
        if isinstance(message, UpdateMetadata):
            self.metadata.apply(message)
        elif isinstance(message, LeaderAndIsr):
            for p in message.partitions:
                tp = (p.topic, p.partition)
                current = self.hosted.get(tp)
                stale = current is not None and current.topic_id == p.topic_id
                if not (stale and p.leader_epoch < current.leader_epoch):  # type: ignore[union-attr]
                    self.hosted[tp] = p
                    self.deleted.discard(tp)
        else:
            for tp in message.partitions:
                self.hosted.pop(tp, None)
                if message.delete:
                    self.deleted.add(tp)

    def view(self) -> tuple[object, ...]:
        return (self.hosted, self.deleted, self.metadata.topics, self.metadata.brokers)


@dataclass
class Controller:
    """Issues requests as the controller does: leader epochs only grow; a deleted topic comes
    back with a new id."""

    epochs: dict[tuple[str, int], int] = field(default_factory=dict)
    ids: dict[str, uuid.UUID] = field(default_factory=lambda: {t: uuid.uuid4() for t in TOPICS})

    def info(self, tp: tuple[str, int]) -> PartitionInfo:
        epoch = self.epochs[tp] = self.epochs.get(tp, -1) + 1
        return PartitionInfo(tp[0], self.ids[tp[0]], tp[1], 1, epoch, (1,), (1,), epoch, 1)

    def message(self, action: tuple[str, list[tuple[str, int]], bool]) -> Message:
        kind, tps, flag = action
        if kind == "lai":
            return LeaderAndIsr(1, 1, tuple(self.info(tp) for tp in tps), (BROKER,))
        if kind == "um":
            return UpdateMetadata(1, 1, (BROKER,), tuple(self.info(tp) for tp in tps), full=flag)
        if kind == "delete":
            topic = tps[0][0] if tps else "a"
            gone = tuple((topic, p) for p in PARTITIONS)
            self.ids[topic] = uuid.uuid4()
            for tp in gone:
                self.epochs.pop(tp, None)
            return StopReplica(1, 1, gone, delete=True)
        return StopReplica(1, 1, tuple(tps), delete=False)


ACTIONS = st.tuples(
    st.sampled_from(["lai", "um", "stop", "delete"]),
    st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from(PARTITIONS)), unique=True),
    st.booleans(),
)


def deleted_um(topic: str) -> UpdateMetadata:
    return UpdateMetadata(1, 1, (BROKER,), (), deleted_topics=(topic,))


@given(st.lists(ACTIONS, max_size=40), st.integers(0, 40))
def test_folded_queue_ends_where_the_sequence_ends(actions: list, sent_early: int) -> None:
    controller = Controller()
    messages: list[Message] = []
    for action in actions:
        message = controller.message(action)
        messages.append(message)
        if isinstance(message, StopReplica) and message.delete:
            messages.append(deleted_um(message.partitions[0][0]))
    one_by_one, folded = Replica(), Replica()
    for message in messages:
        one_by_one.apply(message)
    pending: list[Message] = []
    for i, message in enumerate(messages):
        enqueue(pending, message)
        if i == sent_early and pending:  # the sender took one while more arrived
            folded.apply(pending.pop(0))
    for message in pending:
        folded.apply(message)
    assert folded.view() == one_by_one.view()
    assert sum(isinstance(m, UpdateMetadata) for m in pending) <= 1


def test_a_batch_of_decisions_is_one_request_per_kind() -> None:
    controller = Controller()
    pending: list[Message] = []
    for p in PARTITIONS:
        enqueue(pending, controller.message(("lai", [("a", p)], False)))
        enqueue(pending, controller.message(("um", [("a", p)], False)))
    assert [type(m) for m in pending] == [LeaderAndIsr, UpdateMetadata]
    assert len(pending[0].partitions) == len(pending[1].partitions) == len(PARTITIONS)


def test_a_full_update_replaces_queued_ones_and_lead_after_stop_stays_ordered() -> None:
    controller = Controller()
    pending: list[Message] = []
    enqueue(pending, controller.message(("lai", [("a", 0)], False)))
    enqueue(pending, controller.message(("um", [("a", 0)], False)))
    enqueue(pending, controller.message(("stop", [("a", 0)], False)))
    enqueue(pending, controller.message(("lai", [("a", 0)], False)))
    enqueue(pending, controller.message(("um", [("b", 0)], True)))
    kinds = [type(m).__name__ for m in pending]
    assert kinds == ["LeaderAndIsr", "StopReplica", "LeaderAndIsr", "UpdateMetadata"]
    last = pending[-1]
    assert isinstance(last, UpdateMetadata) and last.full
