"""``pafka quotas describe|alter``: client quotas, as ``kafka-configs.sh --entity-type users|
clients`` sets them.

An entity is ``--user U`` or ``--user-default``, ``--client-id C`` or ``--client-id-default``,
or a user with a client id. ``--add producer_byte_rate=N,consumer_byte_rate=N,
request_percentage=P`` sets quotas and ``--delete KEY[,KEY]`` removes them. With
``--zookeeper`` the change is written to ZooKeeper directly (Kafka's layout, with a change
notification every broker follows); with ``--bootstrap-server`` it goes through a broker
(AlterClientQuotas, DescribeClientQuotas).
"""

from __future__ import annotations

import argparse
from typing import Any

from pafka.admin import client_quotas as admin
from pafka.cli.kafka_admin import run_admin
from pafka.cli.target import add_target_arguments, resolve, zookeeper
from pafka.client import quotas as client
from pafka.errors import ConfigError
from pafka.security.quotas import DEFAULT


def register(sub: Any) -> None:
    parser = sub.add_parser("quotas", help="describe or change client quotas")
    verbs = parser.add_subparsers(dest="verb", required=True)
    describe = verbs.add_parser("describe", help="show the quotas of matching entities")
    alter = verbs.add_parser("alter", help="set or delete an entity's quotas")
    alter.add_argument("--add", metavar="K=V,K2=V2", help="quotas to set")
    alter.add_argument("--delete", metavar="K,K2", help="quotas to remove")
    alter.add_argument(
        "--validate-only", action="store_true", help="check the change, write nothing"
    )
    describe.add_argument(
        "--strict", action="store_true", help="only entities with exactly the given types"
    )
    for p, handler in ((describe, describe_quotas), (alter, alter_quotas)):
        user = p.add_mutually_exclusive_group()
        user.add_argument("--user")
        user.add_argument("--user-default", action="store_true", help="the default user")
        client_id = p.add_mutually_exclusive_group()
        client_id.add_argument("--client-id")
        client_id.add_argument(
            "--client-id-default", action="store_true", help="the default client id"
        )
        add_target_arguments(p)
        p.set_defaults(handler=handler)


def _name(name: str | None, default: bool) -> str | None:
    return DEFAULT if default else name


def _entity(args: argparse.Namespace) -> admin.Entity:
    entity = (
        _name(args.user, args.user_default),
        _name(args.client_id, args.client_id_default),
    )
    if entity == (None, None):
        raise ConfigError(
            "name an entity: --user/--user-default and/or --client-id/--client-id-default"
        )
    return entity


def _ops(args: argparse.Namespace) -> list[tuple[str, float | None]]:
    ops: list[tuple[str, float | None]] = []
    for item in (args.add or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.strip().partition("=")
        try:
            ops.append((key.strip(), float(value)))
        except ValueError:
            raise ConfigError(f"--add takes KEY=NUMBER[,KEY=NUMBER...], got {item!r}") from None
        if not sep:
            raise ConfigError(f"--add takes KEY=NUMBER[,KEY=NUMBER...], got {item!r}")
    ops += [(k.strip(), None) for k in (args.delete or "").split(",") if k.strip()]
    if not ops:
        raise ConfigError("alter needs --add or --delete")
    return ops


def _describe_entity(entity: admin.Entity) -> str:
    parts = []
    if entity[0] is not None:
        parts.append("the default user" if entity[0] == DEFAULT else f"user {entity[0]!r}")
    if entity[1] is not None:
        parts.append(
            "the default client id" if entity[1] == DEFAULT else f"client id {entity[1]!r}"
        )
    return ", ".join(parts)


def alter_quotas(args: argparse.Namespace) -> int:
    entity, ops = _entity(args), _ops(args)
    if args.zookeeper:
        with zookeeper(args.zookeeper) as zk:
            admin.alter_quotas(zk, entity, ops, args.validate_only)
    else:

        async def work(admin_client: Any) -> None:
            await client.alter_client_quotas(admin_client.cluster, entity, ops, args.validate_only)

        run_admin(resolve(args), work)
    verb = "Validated the change of" if args.validate_only else "Completed updating"
    print(f"{verb} quotas of {_describe_entity(entity)}.")
    return 0


def describe_quotas(args: argparse.Namespace) -> int:
    components = []
    if args.user is not None or args.user_default:
        components.append(admin.FilterComponent(admin.USER, _name(args.user, args.user_default)))
    if args.client_id is not None or args.client_id_default:
        components.append(
            admin.FilterComponent(admin.CLIENT_ID, _name(args.client_id, args.client_id_default))
        )
    if args.zookeeper:
        with zookeeper(args.zookeeper) as zk:
            found = admin.describe_quotas(zk, components, args.strict)
    else:

        async def work(admin_client: Any) -> dict[admin.Entity, dict[str, float]]:
            return await client.describe_client_quotas(
                admin_client.cluster, components, args.strict
            )

        found = run_admin(resolve(args), work)
    for entity, values in sorted(found.items(), key=lambda item: str(item[0])):
        shown = ", ".join(f"{k}={_number(v)}" for k, v in sorted(values.items()))
        print(f"Quota configs for {_describe_entity(entity)} are {shown}")
    return 0


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)
