"""``pafka produce`` and ``pafka consume``: the console producer and consumer.

They use kafka-python, a real Kafka client, so they exercise the brokers exactly as users'
applications do. Consumption assigns partitions directly (no consumer group).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pafka.cli.target import add_target_arguments, bootstrap_servers, resolve
from pafka.errors import ConfigError

ACKS = {"0": 0, "1": 1, "all": "all", "-1": "all"}


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
    add_target_arguments(consume)
    consume.set_defaults(handler=consume_records)


def produce_records(args: argparse.Namespace) -> int:
    from kafka import KafkaProducer

    servers = bootstrap_servers(resolve(args))
    producer = KafkaProducer(
        bootstrap_servers=servers,
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


def consume_records(args: argparse.Namespace) -> int:
    from kafka import KafkaConsumer, TopicPartition

    if args.offset is not None and args.partition is None:
        raise ConfigError("--offset needs --partition")
    servers = bootstrap_servers(resolve(args))
    consumer = KafkaConsumer(
        bootstrap_servers=servers, enable_auto_commit=False, client_id="pafka-console-consumer"
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
                    value = record.value.decode(errors="replace") if record.value else ""
                    if args.print_key:
                        key = record.key.decode(errors="replace") if record.key else "null"
                        print(f"{key}\t{value}")
                    else:
                        print(value)
                    seen += 1
                    if args.max_messages is not None and seen >= args.max_messages:
                        break
    finally:
        consumer.close()
    return 0
