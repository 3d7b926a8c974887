"""ISR-change notifications, read and cleared in passes of pipelined reads and chunked multis.

A leader that changes ISRs writes one sequential ``/isr_change_notification/isr_change_*``
znode listing the partitions (many per znode: brokers batch them, as Kafka's do). The
controller only needs to know which partitions to re-read, so however many watch events fired,
one pass lists the pending children once, reads a bounded number of them with all reads in
flight, re-reads the named partitions' states the same way, and deletes the notifications it
read in fenced multis. A pass is bounded so that a broker failure waiting behind it is not
delayed by a backlog; the caller runs another pass while notifications remain.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from dataclasses import dataclass

from kazoo.client import KazooClient

from pafka.errors import CoordinationError
from pafka.zk.client import children_or_empty, get_many
from pafka.zk.znodes import (
    ISR_CHANGE_NOTIFICATION,
    IsrChangeNotificationZNode,
    TopicPartitionsPayload,
)
from services.controller.context import ControllerContext, TopicPartition
from services.controller.fencing import Epoch, fenced_commit_units, op_delete
from services.controller.loading import reread_states

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IsrPass:
    changed: list[TopicPartition]
    # Notifications read and deleted in this pass.
    handled: int
    # More were pending than one pass takes.
    more: bool


def notified_partitions(
    reads: list[tuple[str, bytes | None]], known: Container[TopicPartition]
) -> tuple[list[TopicPartition], list[str]]:
    """The known partitions named by the notifications read, and the paths to delete: every
    one read, a malformed one too (it can never become readable), none already gone."""
    found: set[TopicPartition] = set()
    handled: list[str] = []
    for path, data in reads:
        if data is None:
            continue  # deleted by an earlier pass that listed it too
        try:
            found.update(TopicPartitionsPayload.decode(data, path).partitions)
        except (CoordinationError, KeyError, TypeError, ValueError) as exc:
            log.warning("dropping malformed ISR-change notification %s: %r", path, exc)
        handled.append(path)
    return sorted(tp for tp in found if tp in known), handled


def isr_pass(
    zk: KazooClient, ctx: ControllerContext, epoch: Epoch, max_notifications: int
) -> IsrPass:
    """One bounded pass over the pending notifications. Blocking: run it in a worker thread."""
    children = children_or_empty(zk, ISR_CHANGE_NOTIFICATION)
    paths = [IsrChangeNotificationZNode.path(c) for c in children[:max_notifications]]
    reads = get_many(zk, paths)
    changed, handled = notified_partitions(
        [(path, None if r is None else r[0]) for path, r in zip(paths, reads, strict=True)],
        ctx.partitions,
    )
    reread_states(zk, ctx, changed)
    # A failed delete (the znode went meanwhile) only means it is read again next pass.
    fenced_commit_units(zk, epoch, [[op_delete(path)] for path in handled])
    return IsrPass(changed, len(handled), len(children) > len(paths))
