"""``pafka zookeeper secure|unsecure``: set the ACLs of an existing cluster's znodes.

Kafka's ``zookeeper-security-migration --zookeeper.acl secure|unsecure``. The identity comes
from ``PAFKA_CLI_ZK_AUTH`` (or ``PAFKA_CLI_ZK_AUTH_FILE``): the nodes become writable by it
alone, so it must be the identity the services are given.
"""

from __future__ import annotations

import argparse
from typing import Any

from pafka.cli.target import PREFIX, resolve, zk_security, zookeeper
from pafka.errors import ConfigError
from pafka.zk.acl_migration import set_tree_acls


def register(sub: Any) -> None:
    parser = sub.add_parser("zookeeper", help="ZooKeeper security of an existing cluster")
    verbs = parser.add_subparsers(dest="verb", required=True)
    for verb, secure, text in (
        ("secure", True, f"give every pafka znode its secure ACL (identity: {PREFIX}ZK_AUTH)"),
        ("unsecure", False, "make every pafka znode world-writable again"),
    ):
        command = verbs.add_parser(verb, help=text)
        command.add_argument("--zookeeper", help="HOST:PORT[/chroot] of the cluster's ZooKeeper")
        command.set_defaults(handler=set_acls, secure=secure, bootstrap_server=None)


def set_acls(args: argparse.Namespace) -> int:
    target = resolve(args)
    if target.zookeeper is None:
        raise ConfigError("--zookeeper is needed")
    if zk_security().auth is None:
        # Either way the session needs the identity that may change the nodes' ACLs.
        raise ConfigError(f"set {PREFIX}ZK_AUTH (digest:user:password) to the cluster's identity")
    with zookeeper(target.zookeeper) as zk:
        count = set_tree_acls(zk, secure=args.secure)
    state = "secure" if args.secure else "open"
    print(f"set {state} ACLs on {count} znodes")
    return 0
