"""``pafka users create|delete|list``: SCRAM users in ZooKeeper, as kafka-configs.sh's
``--zookeeper --entity-type users --alter --add-config 'SCRAM-SHA-512=[password=...]'``.

A password is read from a file (its first line) or from standard input, never taken from argv,
where any user of the machine can read it with ps, unless ``--password`` says so explicitly
(then a warning is printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pafka.admin import scram_users
from pafka.cli.target import resolve, zookeeper
from pafka.errors import ConfigError, ResourceNotFoundError
from pafka.security.scram_credentials import (
    DEFAULT_ITERATIONS,
    ScramCredential,
    check_iterations,
)

DEFAULT_MECHANISM = "SCRAM-SHA-512"


def register(sub: Any) -> None:
    parser = sub.add_parser("users", help="create, delete and list SCRAM users")
    verbs = parser.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="create a user or change its password")
    create.add_argument("name")
    create.add_argument(
        "--mechanism",
        action="append",
        choices=scram_users.SCRAM_MECHANISMS,
        help=f"repeatable; {DEFAULT_MECHANISM} when absent",
    )
    create.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    source = create.add_mutually_exclusive_group(required=True)
    source.add_argument("--password-file", type=Path, help="the password is its first line")
    source.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    source.add_argument("--password", help="UNSAFE: visible to anyone running ps")
    create.set_defaults(handler=create_user)
    delete = verbs.add_parser("delete", help="delete a user's credentials")
    delete.add_argument("name")
    delete.add_argument(
        "--mechanism",
        action="append",
        choices=scram_users.SCRAM_MECHANISMS,
        help="repeatable; every mechanism the user has when absent",
    )
    delete.set_defaults(handler=delete_user)
    listing = verbs.add_parser("list", help="list users with their mechanisms and iterations")
    listing.set_defaults(handler=list_users)
    for p in (create, delete, listing):
        p.add_argument("--zookeeper", help="HOST:PORT[/chroot] of the cluster's ZooKeeper")


def _zookeeper(args: argparse.Namespace) -> str:
    if args.zookeeper:
        return str(args.zookeeper)
    args.bootstrap_server = None
    connect = resolve(args).zookeeper
    assert connect is not None
    return connect


def read_password(args: argparse.Namespace) -> str:
    if args.password is not None:
        print(
            "warning: a password given with --password is visible to other users of this "
            "machine (ps, shell history); prefer --password-file or --password-stdin",
            file=sys.stderr,
        )
        password = str(args.password)
    elif args.password_stdin:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    else:
        try:
            text = args.password_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read --password-file {args.password_file}: {exc}") from exc
        password = text.splitlines()[0] if text else ""
    if not password:
        raise ConfigError("the password is empty")
    return password


def create_user(args: argparse.Namespace) -> int:
    if not args.name:
        raise ConfigError("the user name must not be empty")
    check_iterations(args.iterations)
    password = read_password(args)
    mechanisms = list(dict.fromkeys(args.mechanism or [DEFAULT_MECHANISM]))
    changes = [
        scram_users.upsert(m, ScramCredential.from_password(m, password, args.iterations))
        for m in mechanisms
    ]
    with zookeeper(_zookeeper(args)) as zk:
        scram_users.alter_user(zk, args.name, scram_users.combined(changes))
    print(f"Completed updating config for user {args.name}: {', '.join(mechanisms)}")
    return 0


def delete_user(args: argparse.Namespace) -> int:
    with zookeeper(_zookeeper(args)) as zk:
        if args.mechanism:
            mechanisms = list(dict.fromkeys(args.mechanism))
        else:
            config, _ = scram_users.user_config(zk, args.name)
            mechanisms = [m for m in scram_users.SCRAM_MECHANISMS if m in config]
            if not mechanisms:
                raise ResourceNotFoundError(f"user {args.name!r} has no SCRAM credential")
        changes = [scram_users.delete(m) for m in mechanisms]
        scram_users.alter_user(zk, args.name, scram_users.combined(changes))
    print(f"Completed deleting {', '.join(mechanisms)} of user {args.name}")
    return 0


def list_users(args: argparse.Namespace) -> int:
    with zookeeper(_zookeeper(args)) as zk:
        users = scram_users.scram_users(zk)
    for user, config in sorted(users.items()):
        infos = ", ".join(
            f"{i.mechanism}(iterations={i.iterations})"
            for i in scram_users.credential_infos(config)
        )
        print(f"{user}: {infos}")
    return 0
