"""``pafka produce`` and ``pafka consume``: the console producer and consumer.

They use kafka-python, a real Kafka client, so they exercise the brokers exactly as users'
applications do. Without --group, consumption assigns partitions directly; with --group the
consumer joins the group (with pafka's assignors), and commits what it has printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pafka.cli.target import add_target_arguments, kafka_python_options, resolve
from pafka.errors import ConfigError

ACKS = {"0": 0, "1": 1, "all": "all", "-1": "all"}
ASSIGNORS = ("range", "roundrobin", "sticky")


def register(sub: Any) -> None:
    produce = sub.add_parser("produce", help="send lines from stdin (or --value) to a topic")
    produce.add_argument("topic")
    produce.add_argument("--value", action="append", help="a record value (repeatable)")
    produce.add_argument("--key-separator", help="split each line into KEY<sep>VALUE")
    produce.add_argument("--acks", choices=sorted(ACKS), default="all")
    produce.add_argument(
        "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none"
    )
    produce.add_argument("--partition", type=int)
    add_target_arguments(produce)
    produce.set_defaults(handler=produce_records)

    consume = sub.add_parser("consume", help="print a topic's records")
    consume.add_argument("topic")
    consume.add_argument("--from-beginning", action="store_true")
    consume.add_argument("--partition", type=int)
    consume.add_argument("--offset", type=int, help="start offset (needs --partition)")
    consume.add_argument("--max-messages", type=int)
    consume.add_argument("--timeout-ms", type=int, default=5000, help="stop after this idle time")
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument("--group", help="join this consumer group and commit what is printed")
    consume.add_argument("--assignor", choices=ASSIGNORS, default="range", help="with --group")
    add_target_arguments(consume)
    consume.set_defaults(handler=consume_records)


def produce_records(args: argparse.Namespace) -> int:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        **kafka_python_options(resolve(args)),
        acks=ACKS[args.acks],
        compression_type=None if args.compression == "none" else args.compression,
        client_id="pafka-console-producer",
    )
    lines = args.value if args.value else (line.rstrip("\n") for line in sys.stdin)
    futures = []
    try:
        for line in lines:
            key: bytes | None = None
            value = line
            if args.key_separator:
                k, sep, v = line.partition(args.key_separator)
                if not sep:
                    raise ConfigError(f"line has no key separator {args.key_separator!r}: {line!r}")
                key, value = k.encode(), v
            futures.append(
                producer.send(args.topic, value=value.encode(), key=key, partition=args.partition)
            )
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close()
    print(f"produced {len(futures)} record(s) to {args.topic}", file=sys.stderr)
    return 0


def _print_record(record: Any, print_key: bool) -> None:
    value = record.value.decode(errors="replace") if record.value else ""
    if print_key:
        key = record.key.decode(errors="replace") if record.key else "null"
        print(f"{key}\t{value}")
    else:
        print(value)


def consume_records(args: argparse.Namespace) -> int:
    from kafka import KafkaConsumer, TopicPartition

    if args.group:
        return consume_group(args)
    if args.offset is not None and args.partition is None:
        raise ConfigError("--offset needs --partition")
    consumer = KafkaConsumer(
        **kafka_python_options(resolve(args)),
        enable_auto_commit=False,
        client_id="pafka-console-consumer",
    )
    try:
        partitions = consumer.partitions_for_topic(args.topic)
        if not partitions:
            raise ConfigError(f"topic {args.topic!r} does not exist")
        chosen = [args.partition] if args.partition is not None else sorted(partitions)
        tps = [TopicPartition(args.topic, p) for p in chosen]
        consumer.assign(tps)
        if args.offset is not None:
            consumer.seek(tps[0], args.offset)
        elif args.from_beginning:
            consumer.seek_to_beginning(*tps)
        else:
            consumer.seek_to_end(*tps)
        seen = 0
        while args.max_messages is None or seen < args.max_messages:
            batch = consumer.poll(timeout_ms=args.timeout_ms)
            if not batch:
                break
            for records in batch.values():
                for record in records:
                    _print_record(record, args.print_key)
                    seen += 1
                    if args.max_messages is not None and seen >= args.max_messages:
                        break
    finally:
        consumer.close()
    return 0


def consume_group(args: argparse.Namespace) -> int:
    """Subscribe as a member of ``--group``; after each printed batch, commit its positions."""
    from kafka import KafkaConsumer, OffsetAndMetadata

    from pafka.groups import kafka_python_assignors as assignors

    if args.partition is not None or args.offset is not None:
        raise ConfigError("--partition and --offset cannot be used with --group")
    assignor = {
        "range": assignors.PafkaRangeAssignor,
        "roundrobin": assignors.PafkaRoundRobinAssignor,
        "sticky": assignors.PafkaStickyAssignor,
    }[args.assignor]
    consumer = KafkaConsumer(
        **kafka_python_options(resolve(args)),
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if args.from_beginning else "latest",
        partition_assignment_strategy=[assignor],
        client_id="pafka-console-consumer",
    )
    try:
        if args.topic not in consumer.topics():
            raise ConfigError(f"topic {args.topic!r} does not exist")
        consumer.subscribe([args.topic])
        seen, assigned = 0, False
        idle_until = time.monotonic() + args.timeout_ms / 1000
        while args.max_messages is None or seen < args.max_messages:
            if time.monotonic() > idle_until:
                break
            batch = consumer.poll(timeout_ms=min(args.timeout_ms, 500))
            if not assigned and consumer.assignment():
                assigned = True  # the idle time counts from the end of the first join
                idle_until = time.monotonic() + args.timeout_ms / 1000
            done = {}
            for tp, records in batch.items():
                for record in records:
                    if args.max_messages is not None and seen >= args.max_messages:
                        break
                    _print_record(record, args.print_key)
                    done[tp] = OffsetAndMetadata(record.offset + 1, "", -1)
                    seen += 1
            if done:
                sys.stdout.flush()
                consumer.commit(offsets=done)
                idle_until = time.monotonic() + args.timeout_ms / 1000
    finally:
        consumer.close()
    return 0
