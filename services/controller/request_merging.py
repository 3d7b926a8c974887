"""Folding control requests queued for one broker into fewer, newer ones (pure).

A broker that is slow or unreachable must neither lose a request nor make the controller hold
one per decision. A request queued for it therefore folds into one already waiting:

- UpdateMetadata: a full one replaces every queued UpdateMetadata; a partial one merges into the
  last queued one (newer partition entries win, a deleted topic drops the queued entries of that
  topic), which moves to the back of the queue: metadata only ever arrives later, never before
  a LeaderAndIsr that preceded it.
- LeaderAndIsr: merges into the last queued LeaderAndIsr, per partition the newer leader epoch
  (or the newer topic id) winning, unless a StopReplica queued after it names one of the
  partitions (the order of "stop" and "lead" must hold).
- StopReplica: merges into the last queued StopReplica of the same kind under the same rule
  with LeaderAndIsr reversed.

Anything that cannot fold is appended: nothing is ever dropped. The broker applies a merged
request exactly as it would have applied the sequence (its metadata cache drops deleted topics
before adding partitions; LeaderAndIsr and StopReplica are per partition).
"""

from __future__ import annotations

from dataclasses import replace

from pafka.control.messages import (
    LeaderAndIsr,
    LiveBroker,
    PartitionInfo,
    StopReplica,
    UpdateMetadata,
)

Message = LeaderAndIsr | UpdateMetadata | StopReplica
TopicPartition = tuple[str, int]


def enqueue(pending: list[Message], message: Message) -> None:
    """Add ``message`` to the requests waiting for one broker, folding where it may."""
    if isinstance(message, UpdateMetadata):
        _enqueue_metadata(pending, message)
        return
    i = _last(pending, message)
    if i is not None and not _crossed(pending[i + 1 :], message):
        queued = pending[i]
        if isinstance(queued, LeaderAndIsr) and isinstance(message, LeaderAndIsr):
            pending[i] = merge_leader_and_isr(queued, message)
            return
        if isinstance(queued, StopReplica) and isinstance(message, StopReplica):
            pending[i] = merge_stop_replica(queued, message)
            return
    pending.append(message)


def _enqueue_metadata(pending: list[Message], message: UpdateMetadata) -> None:
    if message.full:
        pending[:] = [m for m in pending if not isinstance(m, UpdateMetadata)]
        pending.append(message)
        return
    i = _last(pending, message)
    if i is None:
        pending.append(message)
        return
    queued = pending.pop(i)
    assert isinstance(queued, UpdateMetadata)
    pending.append(merge_update_metadata(queued, message))


def _last(pending: list[Message], message: Message) -> int | None:
    for i in range(len(pending) - 1, -1, -1):
        queued = pending[i]
        if type(queued) is type(message) and (
            not isinstance(message, StopReplica)
            or (isinstance(queued, StopReplica) and queued.delete == message.delete)
        ):
            return i
    return None


def _names(message: Message) -> set[TopicPartition]:
    if isinstance(message, StopReplica):
        return set(message.partitions)
    return {(p.topic, p.partition) for p in message.partitions}


def _crossed(later: list[Message], message: Message) -> bool:
    """Whether a request queued after the fold target, of another kind that orders against
    ``message``, names one of its partitions."""
    names = _names(message)
    for queued in later:
        if isinstance(queued, UpdateMetadata):
            continue
        orders = type(queued) is not type(message) or isinstance(queued, StopReplica)
        if orders and _names(queued) & names:
            return True
    return False


def _newer(old: PartitionInfo, new: PartitionInfo) -> PartitionInfo:
    if new.topic_id != old.topic_id or new.leader_epoch >= old.leader_epoch:
        return new
    return old


def _brokers(old: tuple[LiveBroker, ...], new: tuple[LiveBroker, ...]) -> tuple[LiveBroker, ...]:
    merged = {b.id: b for b in old}
    merged.update((b.id, b) for b in new)
    return tuple(merged[i] for i in sorted(merged))


def merge_leader_and_isr(old: LeaderAndIsr, new: LeaderAndIsr) -> LeaderAndIsr:
    merged = {(p.topic, p.partition): p for p in old.partitions}
    for p in new.partitions:
        tp = (p.topic, p.partition)
        merged[tp] = _newer(merged[tp], p) if tp in merged else p
    return replace(
        new,
        partitions=tuple(merged.values()),
        live_leaders=_brokers(old.live_leaders, new.live_leaders),
    )


def merge_stop_replica(old: StopReplica, new: StopReplica) -> StopReplica:
    return replace(new, partitions=tuple(dict.fromkeys(old.partitions + new.partitions)))


def merge_update_metadata(old: UpdateMetadata, new: UpdateMetadata) -> UpdateMetadata:
    if new.full:
        return new
    deleted = set(new.deleted_topics)
    merged = {(p.topic, p.partition): p for p in old.partitions if p.topic not in deleted}
    merged.update(((p.topic, p.partition), p) for p in new.partitions)
    return replace(
        new,
        partitions=tuple(merged.values()),
        deleted_topics=tuple(dict.fromkeys(old.deleted_topics + new.deleted_topics)),
        full=old.full,
        topic_configs={**old.topic_configs, **new.topic_configs},
    )
