"""The admin requests brokers forward to the active controller: ElectLeaders and the
partition-reassignment APIs, run as events of the controller's queue.

Kafka sends these to its controller; pafka's brokers pass them on over the controller's HTTP
port (``services/controller/http.py``), and the answers carry Kafka's error code per
partition. Elections decide with ``pafka.cluster.elect_leaders`` on states re-read from
ZooKeeper (an operator acts on the present, not on the controller's cache), and are written
like every election: fenced, conditional, then told to the brokers.
"""

from __future__ import annotations

from collections.abc import Iterable

from pafka.cluster import elect_leaders
from pafka.cluster.election import Election
from pafka.errors import (
    InvalidTopicError,
    KafkaApiError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)
from services.controller.context import TopicPartition
from services.controller.loading import reread_states
from services.controller.partitions import PartitionManager
from services.controller.reassignment import Reassignments

Outcome = dict[TopicPartition, KafkaApiError | None]


async def run_elections(
    manager: PartitionManager,
    kind: elect_leaders.ElectionType,
    requested: Iterable[TopicPartition] | None,
) -> Outcome:
    """Elect leaders for ``requested`` (every partition when None); each one's outcome."""
    ctx = manager.ctx
    wanted = sorted(ctx.partitions) if requested is None else list(dict.fromkeys(requested))
    outcome: Outcome = {}
    known = []
    for tp in wanted:
        if tp not in ctx.partitions:
            outcome[tp] = UnknownTopicOrPartitionError(f"unknown partition {tp[0]}-{tp[1]}")
        elif tp[0] in ctx.deleting:
            outcome[tp] = InvalidTopicError(f"topic {tp[0]!r} is being deleted")
        else:
            known.append(tp)
    await manager.zk.run(reread_states, manager.zk.kazoo, ctx, known)

    def decide() -> dict[TopicPartition, Election]:
        decisions: dict[TopicPartition, Election] = {}
        for tp in known:
            entry = ctx.partitions.get(tp)
            if entry is None or entry.state is None:
                outcome[tp] = UnknownTopicOrPartitionError(f"{tp[0]}-{tp[1]} has no state yet")
                continue
            state = entry.state
            decided = elect_leaders.decide(
                kind, entry.replicas, state.leader, state.isr, ctx.eligible
            )
            if isinstance(decided, KafkaApiError):
                outcome[tp] = decided
            else:
                decisions[tp] = decided
        return decisions

    written = set(await manager._elect(decide))
    for tp in known:
        if tp in outcome:
            continue
        outcome[tp] = None if tp in written else UnknownServerError("the state kept changing")
    manager._broadcast(sorted(written))
    return outcome


def list_reassignments(
    reassignments: Reassignments, wanted: Iterable[TopicPartition] | None
) -> list[dict[str, object]]:
    """Ongoing reassignments as ListPartitionReassignments reports them."""
    ctx = reassignments.m.ctx
    chosen = set(wanted) if wanted is not None else None
    found = []
    for tp, target in sorted(reassignments.targets.items()):
        entry = ctx.partitions.get(tp)
        if entry is None or (chosen is not None and tp not in chosen):
            continue
        original = reassignments.originals.get(tp)
        adding = [] if original is None else [b for b in target if b not in original]
        removing = [b for b in entry.replicas if b not in target]
        found.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "replicas": list(entry.replicas),
                "adding": adding,
                "removing": removing,
            }
        )
    return found
