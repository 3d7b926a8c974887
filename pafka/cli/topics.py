"""``pafka topics create|list|describe|delete|alter|reassign|delete-records``, the equivalent of
kafka-topics.sh (and of kafka-delete-records.sh: ``pafka.cli.delete_records``).

With ZooKeeper (given, or the local cluster's) the admin writes go straight to ZooKeeper as in
Kafka 2.x's tools; with --bootstrap-server they go over the Kafka protocol. ``create`` through
ZooKeeper then waits (a few seconds at most) until the controller has elected the partitions'
leaders, and says so when it has not; through a broker, CreateTopics itself waits until that
broker's metadata has them. Either way another broker may learn of the topic a moment later:
Kafka clients and the gateway wait for that.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pafka.admin import topics as admin
from pafka.cli import delete_records
from pafka.cli.target import Target, add_target_arguments, admin_client, resolve, zookeeper
from pafka.errors import ConfigError, TopicAlreadyExistsError

LEADER_WAIT_S = 10.0


def _configs(pairs: list[str] | None) -> dict[str, str]:
    result = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--config takes KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def register(sub: Any) -> None:
    parser = sub.add_parser("topics", help="create, list, describe, delete or alter topics")
    verbs = parser.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="create a topic")
    create.add_argument("topic")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--config", action="append", metavar="KEY=VALUE")
    create.add_argument(
        "--if-not-exists",
        action="store_true",
        help="succeed without changes when the topic already exists",
    )
    list_ = verbs.add_parser("list", help="list topics")
    describe = verbs.add_parser("describe", help="describe topics, partitions and leaders")
    describe.add_argument("topic", nargs="?")
    delete = verbs.add_parser("delete", help="delete a topic and its data")
    delete.add_argument("topic")
    alter = verbs.add_parser("alter", help="add partitions or change configs")
    alter.add_argument("topic")
    alter.add_argument("--partitions", type=int)
    alter.add_argument("--config", action="append", metavar="KEY=VALUE")
    reassign = verbs.add_parser("reassign", help="move a partition to new replicas")
    reassign.add_argument("topic")
    reassign.add_argument("--partition", type=int, required=True)
    reassign.add_argument("--replicas", required=True, help="broker ids, e.g. 1,2,3")
    records = verbs.add_parser(
        "delete-records", help="delete records below an offset (kafka-delete-records.sh)"
    )
    records.add_argument("--topic")
    records.add_argument("--partition", type=int)
    records.add_argument("--offset", type=int, help="-1: up to the high watermark")
    records.add_argument(
        "--offset-json-file",
        help='{"partitions": [{"topic": T, "partition": P, "offset": O}], "version": 1}',
    )
    for p, handler in (
        (records, delete_records.delete_records),
        (reassign, reassign_partition),
        (create, create_topic),
        (list_, list_topics),
        (describe, describe_topics),
        (delete, delete_topic),
        (alter, alter_topic),
    ):
        add_target_arguments(p)
        p.set_defaults(handler=handler)


def _use_zookeeper(target: Target) -> bool:
    return target.zookeeper is not None and not target.bootstrap


def _zk_target(args: argparse.Namespace) -> Target:
    """Prefer ZooKeeper for admin unless --bootstrap-server was given explicitly."""
    target = resolve(args)
    if args.bootstrap_server:
        return Target(args.bootstrap_server, None, target.security)
    return Target(None, target.zookeeper, target.security)


def create_topic(args: argparse.Namespace) -> int:
    from kafka.errors import TopicAlreadyExistsError as ClientTopicExists

    try:
        _create(args)
    except (TopicAlreadyExistsError, ClientTopicExists):
        if not args.if_not_exists:
            raise
        print(f'Topic "{args.topic}" already exists.')
        return 0
    print(f'Created topic "{args.topic}".')
    return 0


def _create(args: argparse.Namespace) -> None:
    target = _zk_target(args)
    configs = _configs(args.config)
    if _use_zookeeper(target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            node = admin.create_topic(
                zk, args.topic, args.partitions, args.replication_factor, configs
            )
            deadline = time.monotonic() + LEADER_WAIT_S
            while not admin.leaders_elected(zk, args.topic, node.partitions):
                if time.monotonic() > deadline:
                    print(
                        f"note: no leader elected yet for every partition of {args.topic!r} "
                        f"after {LEADER_WAIT_S:g}s (is a controller running?); the topic is "
                        "written and becomes usable once the controller elects them",
                        file=sys.stderr,
                    )
                    break
                time.sleep(0.05)
        return
    from kafka.admin import NewTopic

    client = admin_client(target)
    try:
        client.create_topics(
            [NewTopic(args.topic, args.partitions, args.replication_factor, topic_configs=configs)]
        )
    finally:
        client.close()


def list_topics(args: argparse.Namespace) -> int:
    target = _zk_target(args)
    if _use_zookeeper(target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            pending = admin.pending_deletions(zk)
            for name in admin.list_topics(zk):
                print(f"{name} - marked for deletion" if name in pending else name)
    else:
        client = admin_client(target)
        try:
            for name in sorted(client.list_topics()):
                print(name)
        finally:
            client.close()
    return 0


def format_description(d: admin.TopicDescription) -> list[str]:
    rf = len(next(iter(d.partitions.values()))[0]) if d.partitions else 0
    configs = ",".join(f"{k}={v}" for k, v in sorted(d.config.items()))
    lines = [
        f"Topic: {d.name}\tTopicId: {d.topic_id}\tPartitionCount: {len(d.partitions)}\t"
        f"ReplicationFactor: {rf}\tConfigs: {configs}"
        + ("\tMarkedForDeletion: true" if d.marked_for_deletion else "")
    ]
    for p, (replicas, state) in sorted(d.partitions.items()):
        leader = "none" if state is None or state.leader < 0 else str(state.leader)
        isr = ",".join(map(str, state.isr)) if state else ""
        lines.append(
            f"\tTopic: {d.name}\tPartition: {p}\tLeader: {leader}\t"
            f"Replicas: {','.join(map(str, replicas))}\tIsr: {isr}"
        )
    return lines


def describe_topics(args: argparse.Namespace) -> int:
    target = resolve(args)
    if target.zookeeper is None:
        raise ConfigError("describe reads ZooKeeper; give --zookeeper")
    with zookeeper(target.zookeeper) as zk:
        names = [args.topic] if args.topic else admin.list_topics(zk)
        for name in names:
            for line in format_description(admin.describe_topic(zk, name)):
                print(line)
    return 0


def delete_topic(args: argparse.Namespace) -> int:
    target = _zk_target(args)
    if _use_zookeeper(target):
        assert target.zookeeper is not None
        with zookeeper(target.zookeeper) as zk:
            admin.delete_topic(zk, args.topic)
    else:
        client = admin_client(target)
        try:
            client.delete_topics([args.topic])
        finally:
            client.close()
    print(f'Topic "{args.topic}" is marked for deletion.')
    return 0


def alter_topic(args: argparse.Namespace) -> int:
    if args.partitions is None and not args.config:
        raise ConfigError("alter needs --partitions or --config")
    target = resolve(args)
    if target.zookeeper is None:
        raise ConfigError("alter writes ZooKeeper; give --zookeeper")
    with zookeeper(target.zookeeper) as zk:
        if args.partitions is not None:
            admin.add_partitions(zk, args.topic, args.partitions)
            print(f'Topic "{args.topic}" now has {args.partitions} partitions.')
        if args.config:
            overrides = {**admin.topic_overrides(zk, args.topic), **_configs(args.config)}
            admin.alter_topic_config(zk, args.topic, overrides)
            print(f'Updated the configs of topic "{args.topic}".')
    return 0


def reassign_partition(args: argparse.Namespace) -> int:
    target = resolve(args)
    if target.zookeeper is None:
        raise ConfigError("reassign writes ZooKeeper; give --zookeeper")
    try:
        replicas = tuple(int(b) for b in args.replicas.split(","))
    except ValueError:
        raise ConfigError(
            f"--replicas takes comma-separated broker ids, got {args.replicas!r}"
        ) from None
    with zookeeper(target.zookeeper) as zk:
        admin.reassign_partitions(zk, {(args.topic, args.partition): replicas})
    print(f"Reassignment of {args.topic}-{args.partition} to {list(replicas)} started.")
    return 0
