"""Setting the ACLs of existing znodes (Kafka's ``zookeeper-security-migration`` tool).

Znodes keep the ACL they were created with; turning ``ZK_SET_ACL`` on later protects only new
ones. This walks every pafka subtree (``znodes.PAFKA_ROOTS``, nothing else of a shared
ensemble) and sets each node's ACL to the one its path gets at creation (``secure``), or opens
them all again (``secure=False``, Kafka's ``--zookeeper.acl=unsecure``). Each level of the tree
is read and written pipelined. Blocking: run it in a thread or from the command line.
"""

from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.zk import znodes
from pafka.zk.client import children_many, exists_many
from pafka.zk.security import acl_for


def set_tree_acls(zk: KazooClient, *, secure: bool) -> int:
    """Set the ACL of every existing pafka znode; the number of nodes set. A node deleted
    meanwhile is skipped."""
    level = [
        path
        for path, stat in zip(znodes.PAFKA_ROOTS, exists_many(zk, znodes.PAFKA_ROOTS), strict=True)
        if stat
    ]
    done = 0
    while level:
        pending = [(p, zk.set_acls_async(p, acl_for(p, secure=secure))) for p in level]
        for _path, request in pending:
            try:
                request.get()
                done += 1
            except NoNodeError:
                pass
        children = children_many(zk, level)
        level = [f"{p}/{c}" for p, cs in zip(level, children, strict=True) for c in cs or []]
    return done
