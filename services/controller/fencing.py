"""Controller election and epoch-fenced writes, as Kafka 2.x fences controllers in ZooKeeper.

Becoming active is one transaction: create the ephemeral ``/controller`` and bump
``/controller_epoch`` conditionally on its version. Every later write is a transaction that
first checks that version again, so a controller that was deposed (its session expired while
it was paused, say) cannot change anything even if it does not know it yet.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.errors import ControllerFencedError, CoordinationError
from pafka.zk.client import check_transaction
from pafka.zk.znodes import ControllerEpochZNode, ControllerZNode

Op = Callable[[TransactionRequest], None]

# ZooKeeper refuses a request over jute.maxbuffer (1 MB by default). An op carries one path
# (a topic name is at most 249 characters) and at most a partition state's small JSON, well
# under 1 KB, so a thousand ops stay far below the limit.
MAX_OPS_PER_MULTI = 1000


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


def chunk_units(sizes: Sequence[int], max_ops: int = MAX_OPS_PER_MULTI) -> list[range]:
    """Group consecutive units (each ``sizes[i]`` ops that must commit together) into as few
    ranges as fit ``max_ops`` ops each; a unit larger than ``max_ops`` is a range of its own."""
    chunks: list[range] = []
    start, ops = 0, 0
    for i, size in enumerate(sizes):
        if ops and ops + size > max_ops:
            chunks.append(range(start, i))
            start, ops = i, 0
        ops += size
    if ops or start < len(sizes):
        chunks.append(range(start, len(sizes)))
    return [c for c in chunks if len(c)]


def fenced_commit_units(
    zk: KazooClient, epoch: Epoch, units: Sequence[Sequence[Op]], max_ops: int = MAX_OPS_PER_MULTI
) -> set[int]:
    """Commit ``units`` in chunked transactions, each fenced like :func:`fenced_commit`, all
    sent before the first answer is awaited; returns the indexes of the units whose
    transaction failed (a version check, a missing or existing node), which the caller
    re-reads. Raises ControllerFencedError when the epoch is no longer current."""
    chunks = chunk_units([len(u) for u in units], max_ops)
    pending = []
    for chunk in chunks:
        tx = zk.transaction()
        tx.check(ControllerEpochZNode.path(), epoch.zk_version)
        for i in chunk:
            for op in units[i]:
                op(tx)
        pending.append(tx.commit_async())
    failed: set[int] = set()
    for chunk, request in zip(chunks, pending, strict=True):
        results: list[Any] = request.get()
        first = results[0] if results else None
        if isinstance(first, BadVersionError | NoNodeError):
            raise ControllerFencedError(
                f"controller epoch {epoch.epoch} is no longer current; another controller took over"
            )
        if any(isinstance(r, BaseException) for r in results):
            failed.update(chunk)
    return failed


def fenced_commit_all(zk: KazooClient, epoch: Epoch, ops: Sequence[Op]) -> None:
    """Run ``ops`` (independent of one another) in chunked fenced transactions; raise the
    first failure."""
    if fenced_commit_units(zk, epoch, [[op] for op in ops]):
        raise CoordinationError("a chunked controller write failed: ZooKeeper changed under it")


def op_create(path: str, data: bytes = b"") -> Op:
    return lambda tx: tx.create(path, data)


def op_set(path: str, data: bytes, version: int) -> Op:
    return lambda tx: tx.set_data(path, data, version=version)


def op_delete(path: str) -> Op:
    return lambda tx: tx.delete(path)
