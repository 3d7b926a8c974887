"""Controller election and epoch-fenced writes, as Kafka 2.x fences controllers in ZooKeeper.

Becoming active is one transaction: create the ephemeral ``/controller`` and bump
``/controller_epoch`` conditionally on its version. Every later write is a transaction that
first checks that version again, so a controller that was deposed (its session expired while
it was paused, say) cannot change anything even if it does not know it yet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.errors import ControllerFencedError
from pafka.zk.client import check_transaction
from pafka.zk.znodes import ControllerEpochZNode, ControllerZNode

Op = Callable[[TransactionRequest], None]


@dataclass(frozen=True)
class Epoch:
    epoch: int
    zk_version: int


def try_elect(zk: KazooClient, me: ControllerZNode) -> Epoch | None:
    """Claim the controller role; None when another controller holds it."""
    path = ControllerEpochZNode.path()
    while True:
        if zk.exists(ControllerZNode.path()):
            return None
        try:
            data, stat = zk.get(path)
            current, version = ControllerEpochZNode.decode(data), stat.version
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                zk.create(path, ControllerEpochZNode.encode(0))
            continue
        tx = zk.transaction()
        tx.create(ControllerZNode.path(), me.encode(), ephemeral=True)
        tx.set_data(path, ControllerEpochZNode.encode(current + 1), version=version)
        results = tx.commit()
        if any(isinstance(r, NodeExistsError) for r in results):
            return None
        if any(isinstance(r, BadVersionError) for r in results):
            continue
        check_transaction(results)
        return Epoch(current + 1, version + 1)


def fenced_commit(zk: KazooClient, epoch: Epoch, ops: list[Op]) -> None:
    """Run ``ops`` in one transaction that only commits while ``epoch`` is current."""
    tx = zk.transaction()
    tx.check(ControllerEpochZNode.path(), epoch.zk_version)
    for op in ops:
        op(tx)
    results = tx.commit()
    first = results[0] if results else None
    if isinstance(first, BadVersionError | NoNodeError):
        raise ControllerFencedError(
            f"controller epoch {epoch.epoch} is no longer current; another controller took over"
        )
    check_transaction(results)


def op_create(path: str, data: bytes = b"") -> Op:
    return lambda tx: tx.create(path, data)


def op_set(path: str, data: bytes, version: int) -> Op:
    return lambda tx: tx.set_data(path, data, version=version)


def op_delete(path: str) -> Op:
    return lambda tx: tx.delete(path)
