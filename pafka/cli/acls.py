"""``pafka acls add|remove|list``, the equivalent of kafka-acls.sh.

``--zookeeper`` reads and writes the ACL znodes directly (as kafka-acls.sh with its
``--authorizer-properties zookeeper.connect=...``); ``--bootstrap-server`` goes through a
broker's CreateAcls, DescribeAcls and DeleteAcls. Each principal given with ``--allow-principal``
gets an ALLOW entry per ``--allow-host`` (default ``*``) and ``--operation`` (default All) on
each resource named; ``--deny-principal`` and ``--deny-host`` likewise for DENY. ``remove``
without principals removes every ACL of the resources, after a confirmation unless ``--force``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from pafka.admin import acls as store
from pafka.cli.kafka_admin import run_admin
from pafka.cli.target import Target, add_target_arguments, resolve, zookeeper
from pafka.client import acls as client
from pafka.errors import ConfigError
from pafka.security.acls import (
    ANY_BINDING,
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    parse_principal,
)


def register(sub: Any) -> None:
    parser = sub.add_parser("acls", help="add, remove or list ACLs (kafka-acls.sh)")
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name, handler, text in (
        ("add", add_command, "grant or deny operations on resources"),
        ("remove", remove_command, "remove ACLs"),
        ("list", list_command, "list ACLs"),
    ):
        p = verbs.add_parser(name, help=text)
        p.add_argument("--topic", action="append", default=[], metavar="NAME")
        p.add_argument("--group", action="append", default=[], metavar="NAME")
        p.add_argument("--transactional-id", action="append", default=[], metavar="ID")
        p.add_argument("--cluster", action="store_true", help="the cluster resource")
        p.add_argument(
            "--resource-pattern-type",
            default=None,
            choices=["literal", "prefixed", "any", "match"],
            help="literal (default for add/remove) or prefixed; list and remove also any, match",
        )
        if name == "list":
            p.add_argument("--principal", help="only the ACLs of this principal")
        else:
            p.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
            p.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
            p.add_argument("--allow-host", action="append", default=[], metavar="HOST")
            p.add_argument("--deny-host", action="append", default=[], metavar="HOST")
            p.add_argument(
                "--operation", action="append", default=[], metavar="OP", help="default All"
            )
        if name == "remove":
            p.add_argument("--force", action="store_true", help="remove without asking")
        add_target_arguments(p)
        p.set_defaults(handler=handler)


def _resources(args: argparse.Namespace) -> list[tuple[ResourceType, str]]:
    named = [(ResourceType.TOPIC, t) for t in args.topic]
    named += [(ResourceType.GROUP, g) for g in args.group]
    named += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        named.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return named


def _pattern_type(args: argparse.Namespace, *, concrete: bool) -> PatternType:
    pattern = PatternType.parse(args.resource_pattern_type or "literal")
    if concrete and pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise ConfigError("--resource-pattern-type of an added ACL is literal or prefixed")
    return pattern


def _parse(kind: type[Operation], words: Iterable[str]) -> list[Operation]:
    try:
        return [kind.parse(w) for w in words]
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _entries(args: argparse.Namespace) -> list[AccessControlEntry]:
    operations = _parse(Operation, args.operation or ["All"])
    entries = []
    for permission, principals, hosts in (
        (PermissionType.ALLOW, args.allow_principal, args.allow_host or ["*"]),
        (PermissionType.DENY, args.deny_principal, args.deny_host or ["*"]),
    ):
        for principal in principals:
            for host in hosts:
                entries += [
                    AccessControlEntry(parse_principal(principal), host, op, permission)
                    for op in operations
                ]
    return entries


def _use_zookeeper(args: argparse.Namespace, target: Target) -> bool:
    return bool(target.zookeeper) and not args.bootstrap_server


def add_command(args: argparse.Namespace) -> int:
    resources = _resources(args)
    entries = _entries(args)
    if not resources or not entries:
        raise ConfigError("add needs a resource (--topic, --group, ...) and a principal")
    pattern_type = _pattern_type(args, concrete=True)
    bindings = [
        AclBinding(ResourcePattern(rtype, name, pattern_type), entry)
        for rtype, name in resources
        for entry in entries
    ]
    for binding in bindings:
        binding.validate()
    target = resolve(args)
    if _use_zookeeper(args, target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            store.add_acls(zk, bindings)
    else:
        run_admin(target, lambda admin: client.create_acls(admin.cluster, bindings))
    for rtype, name in resources:
        print(f"Adding ACLs for resource `{_describe(rtype, name, pattern_type)}`:")
        for entry in entries:
            print(f"\t{_entry_text(entry)}")
    return 0


def _filters(args: argparse.Namespace) -> list[AclBindingFilter]:
    pattern_type = _pattern_type(args, concrete=False)
    resources = _resources(args)
    if not resources:
        if args.verb == "remove":
            raise ConfigError("remove needs a resource (--topic, --group, ...)")
        pattern = ANY_BINDING.pattern
        pattern_filters = [ResourcePatternFilter(pattern.resource_type, None, PatternType.ANY)]
    else:
        pattern_filters = [ResourcePatternFilter(t, n, pattern_type) for t, n in resources]
    if args.verb == "list":
        principal = str(parse_principal(args.principal)) if args.principal else None
        entry_filters = [
            AccessControlEntryFilter(principal, None, Operation.ANY, PermissionType.ANY)
        ]
    else:
        entries = _entries(args) if args.allow_principal or args.deny_principal else []
        entry_filters = [
            AccessControlEntryFilter(str(e.principal), e.host, e.operation, e.permission)
            for e in entries
        ] or [ANY_BINDING.entry]
    return [AclBindingFilter(p, e) for p in pattern_filters for e in entry_filters]


def remove_command(args: argparse.Namespace) -> int:
    filters = _filters(args)
    if not args.force:
        try:
            answer = input(
                "Are you sure you want to remove ACLs matching the given options? (y/n) "
            )
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("Nothing removed.")
            return 1
    target = resolve(args)
    removed: list[AclBinding] = []
    if _use_zookeeper(args, target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            for acl_filter in filters:
                removed += store.remove_acls(zk, acl_filter)
    else:

        async def work(admin: Any) -> list[AclBinding]:
            found: list[AclBinding] = []
            for acl_filter in filters:
                found += await client.delete_acls(admin.cluster, acl_filter)
            return found

        removed = run_admin(target, work)
    print(f"Removed {len(removed)} ACLs:")
    _print(removed)
    return 0


def list_command(args: argparse.Namespace) -> int:
    filters = _filters(args)
    target = resolve(args)
    found: set[AclBinding] = set()
    if _use_zookeeper(args, target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            for acl_filter in filters:
                for pattern, entries in store.list_acls(zk, acl_filter).items():
                    found |= {AclBinding(pattern, e) for e in entries}
    else:

        async def work(admin: Any) -> list[AclBinding]:
            listed: list[AclBinding] = []
            for acl_filter in filters:
                listed += await client.describe_acls(admin.cluster, acl_filter)
            return listed

        found = set(run_admin(target, work))
    _print(sorted(found))
    return 0


def _describe(rtype: ResourceType, name: str, pattern_type: PatternType) -> str:
    return (
        f"ResourcePattern(resourceType={rtype.name}, name={name}, patternType={pattern_type.name})"
    )


def _entry_text(e: AccessControlEntry) -> str:
    return (
        f"(principal={e.principal}, host={e.host}, operation={e.operation.name}, "
        f"permissionType={e.permission.name})"
    )


def _print(bindings: list[AclBinding]) -> None:
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        by_pattern.setdefault(b.pattern, []).append(b.entry)
    for pattern, entries in sorted(by_pattern.items()):
        p = pattern
        print(f"Current ACLs for resource `{_describe(p.resource_type, p.name, p.pattern_type)}`:")
        for entry in entries:
            print(f"\t{_entry_text(entry)}")
        print()
