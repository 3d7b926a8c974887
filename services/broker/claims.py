"""A coordinator's claim on a key (a group, a transactional id): one znode naming the broker
and an epoch, taken by a conditional write (blocking; run in threads).

Whoever holds the node's version may write the key's state: every such write is a ZooKeeper
transaction that first checks it. A claim is void once its broker left ``/brokers/ids``.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.errors import CorruptZNodeError, NotCoordinatorError
from pafka.zk.znodes import BrokerInfo, GroupCoordinatorZNode

UNCLAIMED = -1


def live_holder(zk: KazooClient, node: type[GroupCoordinatorZNode], key: str) -> int | None:
    """The broker whose claim on ``key`` is live (it is registered), else None; a malformed
    claim reads as none (claiming reports it)."""
    try:
        data, _ = zk.get(node.claim_path(key))
        broker = node.decode(key, data or b"").broker_id
    except (NoNodeError, CorruptZNodeError):
        return None
    if broker == UNCLAIMED or zk.exists(BrokerInfo.path(broker)) is None:
        return None
    return broker


def take(
    zk: KazooClient, node: type[GroupCoordinatorZNode], key: str, broker_id: int, what: str
) -> tuple[int, int, GroupCoordinatorZNode | None]:
    """Claim ``key`` unless another live broker holds it (NotCoordinatorError naming
    ``what``): the claim node's new version, the new epoch, and the claim replaced."""
    path = node.claim_path(key)
    while True:
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            try:
                zk.create(path, node(broker_id, 1).encode())
            except NodeExistsError:
                continue
            return 0, 1, None
        current = node.decode(key, data or b"")
        if (
            current.broker_id not in (broker_id, UNCLAIMED)
            and zk.exists(BrokerInfo.path(current.broker_id)) is not None
        ):
            raise NotCoordinatorError(f"broker {current.broker_id} coordinates {what}")
        epoch = current.epoch + 1
        try:
            zk.set(path, node(broker_id, epoch).encode(), version=stat.version)
        except BadVersionError:
            continue  # another broker claimed at the same moment; look again
        return stat.version + 1, epoch, current
