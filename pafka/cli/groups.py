"""``pafka groups list|describe|reset-offsets|delete|delete-offsets``, the equivalent of
kafka-consumer-groups.sh (delete-offsets in :mod:`pafka.cli.group_offsets_delete`).

Everything goes over the Kafka protocol to the group's coordinator (FindCoordinator, ListGroups,
DescribeGroups, OffsetFetch, OffsetCommit, DeleteGroups) and to partition leaders (ListOffsets),
as Kafka's tool does with --bootstrap-server; --zookeeper only discovers the brokers.

Offsets are reset as Kafka's tool does for an inactive group: one OffsetCommit with generation
-1 and an empty member id, refused while the group has live members.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pafka.cli import group_offsets_delete
from pafka.cli.target import add_target_arguments, admin_client, resolve
from pafka.errors import (
    ConfigError,
    GroupIdNotFoundError,
    KafkaApiError,
    NonEmptyGroupError,
    UnknownTopicOrPartitionError,
)

TopicPartition = tuple[str, int]
INACTIVE_STATES = frozenset({"Empty", "Dead"})
REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance"})
SETTLE_S = 3.0
DESCRIBE_HEADERS = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)
RESET_HEADERS = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")


def register(sub: Any) -> None:
    parser = sub.add_parser("groups", help="list, describe, reset or delete consumer groups")
    verbs = parser.add_subparsers(dest="verb", required=True)
    list_ = verbs.add_parser("list", help="list consumer groups")
    describe = verbs.add_parser("describe", help="offsets, lag and owners of a group's partitions")
    describe.add_argument("group")
    reset = verbs.add_parser("reset-offsets", help="move an inactive group's committed offsets")
    reset.add_argument("group")
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N", help="clamped into [earliest, latest]")
    to.add_argument("--to-datetime", metavar="T", help="ISO-8601, e.g. 2026-11-22T10:00:00Z")
    scope = reset.add_mutually_exclusive_group()
    scope.add_argument(
        "--topic", action="append", metavar="T[:P,P...]", help="topic or partitions (repeatable)"
    )
    scope.add_argument(
        "--all-topics", action="store_true", help="every committed partition (the default)"
    )
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the new offsets only")
    mode.add_argument("--execute", action="store_true", help="apply (the default)")
    delete = verbs.add_parser("delete", help="delete an inactive group and its offsets")
    delete.add_argument("group")
    delete_some = group_offsets_delete.register(verbs)
    for p, handler in (
        (list_, list_groups),
        (describe, describe_group),
        (reset, reset_offsets),
        (delete, delete_group),
        (delete_some, group_offsets_delete.delete_offsets),
    ):
        add_target_arguments(p)
        p.set_defaults(handler=handler)


# -- pure helpers ---------------------------------------------------------------------------


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned columns, two spaces apart, as wide as their widest cell."""
    cells = [list(headers), *([str(c) for c in row] for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def parse_topic_spec(spec: str) -> tuple[str, tuple[int, ...] | None]:
    """``T`` (every partition) or ``T:P,P...``."""
    topic, sep, parts = spec.partition(":")
    if not topic:
        raise ConfigError(f"--topic takes T or T:P,P..., got {spec!r}")
    if not sep:
        return topic, None
    try:
        partitions = tuple(sorted({int(p) for p in parts.split(",")}))
    except ValueError:
        raise ConfigError(f"--topic takes T or T:P,P..., got {spec!r}") from None
    if any(p < 0 for p in partitions):
        raise ConfigError(f"partitions are not negative: {spec!r}")
    return topic, partitions


def parse_datetime_ms(text: str) -> int:
    """ISO-8601 to epoch milliseconds; without a zone it is local time, as in Kafka's tool."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            "--to-datetime takes ISO-8601 such as 2026-11-22T10:00:00[.sss][Z|+HH:MM], "
            f"got {text!r}"
        ) from None
    return round(moment.timestamp() * 1000)


def clamp(offset: int, earliest: int, latest: int) -> int:
    return min(max(offset, earliest), latest)


@dataclass(frozen=True)
class Owner:
    consumer_id: str
    host: str
    client_id: str


def describe_rows(
    group: str,
    committed: dict[TopicPartition, int],
    log_ends: dict[TopicPartition, int],
    owners: dict[TopicPartition, Owner],
) -> list[tuple[object, ...]]:
    """One row per partition with a committed offset or an owner; ``-`` for unknowns."""
    rows: list[tuple[object, ...]] = []
    for tp in sorted(committed.keys() | owners.keys()):
        current = committed.get(tp)
        end = log_ends.get(tp)
        owner = owners.get(tp)
        lag = end - current if current is not None and end is not None else None
        rows.append(
            (
                group,
                tp[0],
                tp[1],
                "-" if current is None else current,
                "-" if end is None else end,
                "-" if lag is None else lag,
                owner.consumer_id if owner else "-",
                owner.host if owner else "-",
                owner.client_id if owner else "-",
            )
        )
    return rows


# -- talking to the cluster ---------------------------------------------------------------


@contextmanager
def _admin(args: argparse.Namespace) -> Iterator[Any]:
    client = admin_client(resolve(args))
    try:
        yield client
    finally:
        client.close()


def _describe(admin: Any, group: str) -> dict[str, Any]:
    """DescribeGroups; a rebalance with no members left (the last one just left) is let settle."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        description: dict[str, Any] = admin.describe_groups([group])[group]
        if description.get("error"):
            if "GroupIdNotFound" in description["error"]:
                raise GroupIdNotFoundError(f"consumer group {group!r} does not exist")
            raise KafkaApiError(f"cannot describe group {group!r}: {description['error']}")
        settling = description.get("group_state") in REBALANCING and not description["members"]
        if not settling or time.monotonic() > deadline:
            return description
        time.sleep(0.1)


def _committed(admin: Any, group: str) -> dict[TopicPartition, int]:
    offsets = admin.list_group_offsets(group).get(group, {})
    return {(tp.topic, tp.partition): o.offset for tp, o in offsets.items() if o.offset >= 0}


def _owners(description: dict[str, Any]) -> dict[TopicPartition, Owner]:
    """Who owns what, from the members' assignments (decoded by kafka-python into dicts)."""
    owners = {}
    for member in description.get("members", []):
        owner = Owner(member["member_id"], member["client_host"], member["client_id"])
        assignment = member.get("member_assignment")
        for entry in (
            assignment.get("assigned_partitions", []) if isinstance(assignment, dict) else []
        ):
            for partition in entry["partitions"]:
                owners[(entry["topic"], partition)] = owner
    return owners


def _list_offsets(admin: Any, specs: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """ListOffsets for each partition: -1 latest (the high watermark), -2 earliest, else a time."""
    from kafka import TopicPartition as KafkaTP
    from kafka.protocol.consumer import OffsetSpec, OffsetTimestamp

    if not specs:
        return {}
    request = {
        KafkaTP(*tp): OffsetSpec(s) if s < 0 else OffsetTimestamp(s) for tp, s in specs.items()
    }
    result = admin.list_partition_offsets(request)
    return {(tp.topic, tp.partition): o.offset for tp, o in result.items()}


def _partitions(admin: Any, specs: list[str]) -> list[TopicPartition]:
    wanted = [parse_topic_spec(s) for s in specs]
    described = {t["name"]: t for t in admin.describe_topics([topic for topic, _ in wanted])}
    result: set[TopicPartition] = set()
    for topic, partitions in wanted:
        info = described.get(topic)
        if info is None or info.get("error_code") or not info.get("partitions"):
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        existing = {p["partition_index"] for p in info["partitions"]}
        missing = sorted(set(partitions or ()) - existing)
        if missing:
            raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition {missing[0]}")
        result.update((topic, p) for p in (partitions or existing))
    return sorted(result)


# -- the commands -------------------------------------------------------------------------


def list_groups(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        for group in sorted({g["group_id"] for g in admin.list_groups()}):
            print(group)
    return 0


def describe_group(args: argparse.Namespace) -> int:
    group = args.group
    with _admin(args) as admin:
        description = _describe(admin, group)
        state = description.get("group_state", "")
        committed = _committed(admin, group)
        if state == "Dead" and not committed:
            raise GroupIdNotFoundError(f"consumer group {group!r} does not exist")
        owners = _owners(description)
        ends = _list_offsets(admin, dict.fromkeys(committed.keys() | owners.keys(), -1))
    if not description.get("members"):
        print(f"\nConsumer group '{group}' has no active members.\n")
    elif state in REBALANCING:
        print(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    for line in format_table(DESCRIBE_HEADERS, describe_rows(group, committed, ends, owners)):
        print(line)
    return 0


def reset_offsets(args: argparse.Namespace) -> int:
    group = args.group
    with _admin(args) as admin:
        try:
            state = _describe(admin, group).get("group_state", "")
        except GroupIdNotFoundError:
            state = "Dead"  # offsets may be set for a group that does not exist yet
        if state not in INACTIVE_STATES:
            raise NonEmptyGroupError(
                f"offsets of group {group!r} can only be reset while it is inactive, "
                f"but its state is {state}; stop its consumers first"
            )
        if args.topic:
            partitions = _partitions(admin, args.topic)
        else:
            partitions = sorted(_committed(admin, group))
            if not partitions:
                raise GroupIdNotFoundError(
                    f"consumer group {group!r} has no committed offsets; "
                    "name partitions with --topic"
                )
        earliest = _list_offsets(admin, dict.fromkeys(partitions, -2))
        latest = _list_offsets(admin, dict.fromkeys(partitions, -1))
        targets = _targets(admin, args, partitions, earliest, latest)
        if not args.dry_run:
            _commit(admin, group, targets)
    rows = [(group, topic, p, offset) for (topic, p), offset in sorted(targets.items())]
    for line in format_table(RESET_HEADERS, rows):
        print(line)
    return 0


def _targets(
    admin: Any,
    args: argparse.Namespace,
    partitions: list[TopicPartition],
    earliest: dict[TopicPartition, int],
    latest: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    if args.to_earliest:
        return {tp: earliest[tp] for tp in partitions}
    if args.to_latest:
        return {tp: latest[tp] for tp in partitions}
    if args.to_offset is not None:
        return {tp: clamp(args.to_offset, earliest[tp], latest[tp]) for tp in partitions}
    found = _list_offsets(admin, dict.fromkeys(partitions, parse_datetime_ms(args.to_datetime)))
    # No record at or after the time: the partition's end.
    return {
        tp: latest[tp] if found[tp] < 0 else clamp(found[tp], earliest[tp], latest[tp])
        for tp in partitions
    }


def _commit(admin: Any, group: str, targets: dict[TopicPartition, int]) -> None:
    from kafka import OffsetAndMetadata
    from kafka import TopicPartition as KafkaTP

    offsets = {KafkaTP(*tp): OffsetAndMetadata(o, "", -1) for tp, o in targets.items()}
    errors = admin.alter_group_offsets(group, offsets)
    failed = sorted(
        (tp.topic, tp.partition, e.__name__) for tp, e in errors.items() if e.errno != 0
    )
    if failed:
        topic, partition, name = failed[0]
        if name in ("UnknownMemberIdError", "IllegalGenerationError", "RebalanceInProgressError"):
            raise NonEmptyGroupError(f"group {group!r} became active; offsets were not reset")
        raise KafkaApiError(
            f"committing offsets of group {group!r} failed for {len(failed)} partition(s), "
            f"first {topic}-{partition}: {name}"
        )


def delete_group(args: argparse.Namespace) -> int:
    group = args.group
    with _admin(args) as admin:
        outcome = admin.delete_groups([group]).get(group, "OK")
    if outcome == "GroupIdNotFoundError":
        raise GroupIdNotFoundError(f"consumer group {group!r} does not exist")
    if outcome == "NonEmptyGroupError":
        raise NonEmptyGroupError(f"consumer group {group!r} has active members; stop them first")
    if outcome != "OK":
        raise KafkaApiError(f"deleting consumer group {group!r} failed: {outcome}")
    print(f"Deletion of requested consumer groups ('{group}') was successful.")
    return 0
