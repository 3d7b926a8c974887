"""``pafka configs describe|alter``, the equivalent of kafka-configs.sh for topics and brokers.

``--add-config k1=v1,k2=[a,b]`` sets values (brackets hold a list value's commas, as in
kafka-configs.sh) and ``--delete-config k1,k2`` removes overrides; both go in one
IncrementalAlterConfigs request. ``--broker ID`` addresses one broker's dynamic configs,
``--broker-defaults`` the cluster-wide default every broker falls back on.
"""

from __future__ import annotations

import argparse
from typing import Any

from pafka.cli.kafka_admin import run_admin
from pafka.cli.target import add_target_arguments, resolve
from pafka.client import configs
from pafka.cluster.config_ops import OpType
from pafka.errors import ConfigError


def register(sub: Any) -> None:
    parser = sub.add_parser("configs", help="describe or change topic and broker configs")
    verbs = parser.add_subparsers(dest="verb", required=True)
    describe = verbs.add_parser("describe", help="show a topic's or a broker's configs")
    alter = verbs.add_parser("alter", help="set or delete configs")
    alter.add_argument("--add-config", metavar="K=V,K2=[A,B]", help="configs to set")
    alter.add_argument("--delete-config", metavar="K,K2", help="configs to remove")
    alter.add_argument(
        "--validate-only", action="store_true", help="check the change, write nothing"
    )
    for p, handler in ((describe, describe_configs), (alter, alter_configs)):
        entity = p.add_mutually_exclusive_group(required=True)
        entity.add_argument("--topic")
        entity.add_argument("--broker", type=int, metavar="ID")
        entity.add_argument(
            "--broker-defaults", action="store_true", help="the default of every broker"
        )
        add_target_arguments(p)
        p.set_defaults(handler=handler)


def _resource(args: argparse.Namespace) -> configs.Resource:
    if args.topic is not None:
        return configs.Resource(configs.TOPIC, args.topic)
    if args.broker is not None:
        return configs.Resource(configs.BROKER, str(args.broker))
    return configs.Resource(configs.BROKER, "")


def _describe_name(resource: configs.Resource) -> str:
    if resource.type == configs.TOPIC:
        return f"topic {resource.name}"
    return f"broker {resource.name}" if resource.name else "the broker defaults"


def split_pairs(raw: str) -> list[tuple[str, str]]:
    """``k1=v1,k2=[a,b]`` as pairs; a bracketed value keeps its commas (without brackets)."""
    pairs: list[tuple[str, str]] = []
    item, depth = "", 0
    for char in raw + ",":
        if char == "," and depth == 0:
            if item.strip():
                key, sep, value = item.strip().partition("=")
                if not sep or not key:
                    raise ConfigError(f"--add-config takes K=V[,K=V...], got {item.strip()!r}")
                if value.startswith("[") and value.endswith("]"):
                    value = value[1:-1]
                pairs.append((key.strip(), value))
            item = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth < 0:
            raise ConfigError(f"unbalanced ']' in --add-config {raw!r}")
        item += char
    if depth:
        raise ConfigError(f"unbalanced '[' in --add-config {raw!r}")
    return pairs


def describe_configs(args: argparse.Namespace) -> int:
    resource = _resource(args)

    async def work(admin: Any) -> list[configs.ConfigEntry]:
        result: list[configs.ConfigEntry] = await admin.describe_configs(resource)
        return result

    entries = run_admin(resolve(args), work)
    print(f"Configs for {_describe_name(resource)} are:")
    for e in entries:
        value = "(sensitive)" if e.sensitive else e.value
        print(f"  {e.name}={value} source={e.source} read_only={str(e.read_only).lower()}")
    return 0


def alter_configs(args: argparse.Namespace) -> int:
    changes: list[tuple[str, OpType, str | None]] = [
        (k, OpType.SET, v) for k, v in split_pairs(args.add_config or "")
    ]
    changes += [
        (k.strip(), OpType.DELETE, None) for k in (args.delete_config or "").split(",") if k.strip()
    ]
    if not changes:
        raise ConfigError("alter needs --add-config or --delete-config")
    resource = _resource(args)

    async def work(admin: Any) -> None:
        await admin.alter_configs(resource, changes, validate_only=args.validate_only)

    run_admin(resolve(args), work)
    verb = "Validated the change of" if args.validate_only else "Completed updating"
    print(f"{verb} config for {_describe_name(resource)}.")
    return 0
