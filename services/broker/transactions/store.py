"""A transaction coordinator's reads and writes of ``/transactions/{id}`` (blocking; run in
threads through ``ZkClient.run``).

Claiming an id bumps the version of ``/transactions/{id}/coordinator``; every later write of
the id's state is a ZooKeeper transaction whose first operation checks that version, so a
broker that lost the id (its session expired, it was paused) cannot change anything.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError

from pafka.errors import CorruptZNodeError, NotCoordinatorError
from pafka.transactions.metadata import TxnMetadata
from pafka.zk.client import check_transaction
from pafka.zk.znodes import (
    BROKER_IDS,
    TransactionCoordinatorZNode,
    TransactionStateZNode,
    TransactionZNodes,
)
from services.broker import claims
from services.broker.groups.shared_registry import children, read_all

Z = TransactionZNodes
UNCLAIMED = claims.UNCLAIMED


@dataclass(frozen=True)
class Claim:
    """This broker's hold on a transactional id: the claim node version its writes check and
    the epoch its markers carry."""

    transactional_id: str
    version: int
    epoch: int


def holder(zk: KazooClient, transactional_id: str) -> int | None:
    """The broker whose claim on the id is live (it is registered), else None."""
    return claims.live_holder(zk, TransactionCoordinatorZNode, transactional_id)


def claim(zk: KazooClient, transactional_id: str, broker_id: int) -> Claim:
    """Take the id over unless another live broker holds it (NotCoordinatorError)."""
    zk.ensure_path(Z.state_path(transactional_id))
    what = f"transactional id {transactional_id!r}"
    version, epoch, _ = claims.take(
        zk, TransactionCoordinatorZNode, transactional_id, broker_id, what
    )
    return Claim(transactional_id, version, epoch)


def load(zk: KazooClient, transactional_id: str) -> TxnMetadata | None:
    try:
        data, _ = zk.get(Z.state_path(transactional_id))
    except NoNodeError:
        return None
    return TransactionStateZNode.decode(transactional_id, data or b"")


def _commit(zk: KazooClient, claim: Claim, ops: list[tuple[str, str, bytes]]) -> None:
    txn = zk.transaction()
    txn.check(Z.coordinator_path(claim.transactional_id), claim.version)
    for op, path, data in ops:
        if op == "set":
            txn.set_data(path, data)
        else:
            txn.delete(path)
    results: list[Any] = txn.commit()
    if isinstance(results[0], BadVersionError | NoNodeError):
        raise NotCoordinatorError(f"lost the claim on transactional id {claim.transactional_id!r}")
    check_transaction(results)


def write(zk: KazooClient, claim: Claim, meta: TxnMetadata) -> None:
    """Store the id's state; NotCoordinatorError if the claim is gone."""
    state = Z.state_path(claim.transactional_id)
    _commit(zk, claim, [("set", state, TransactionStateZNode.encode(meta))])


def remove(zk: KazooClient, claim: Claim) -> None:
    """Forget an expired id: its claim and state go in one fenced transaction."""
    tid = claim.transactional_id
    _commit(
        zk, claim, [("delete", Z.coordinator_path(tid), b""), ("delete", Z.state_path(tid), b"")]
    )


def release(zk: KazooClient, claim: Claim) -> None:
    """Give an id up (clean shutdown) so another broker can take it over at once."""
    node = TransactionCoordinatorZNode(UNCLAIMED, claim.epoch)
    with contextlib.suppress(BadVersionError, NoNodeError):
        zk.set(Z.coordinator_path(claim.transactional_id), node.encode(), version=claim.version)


@dataclass(frozen=True)
class ListedId:
    """A transactional id as the housekeeping sees it: its live coordinator (or None)."""

    holder: int | None


def list_ids(zk: KazooClient) -> dict[str, ListedId]:
    ids = children(zk, Z.root())
    claims = read_all(zk, [Z.coordinator_path(t) for t in ids])
    brokers = {int(b) for b in children(zk, BROKER_IDS) if b.isdigit()}
    found: dict[str, ListedId] = {}
    for tid in ids:
        raw = claims.get(Z.coordinator_path(tid))
        broker: int | None = None
        if raw:
            with contextlib.suppress(CorruptZNodeError):
                broker = TransactionCoordinatorZNode.decode(tid, raw).broker_id
        found[tid] = ListedId(broker if broker in brokers else None)
    return found
