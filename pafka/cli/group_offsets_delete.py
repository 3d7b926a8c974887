"""``pafka groups delete-offsets GROUP --topic T[:P,P...]``: kafka-consumer-groups.sh
``--delete-offsets``, one OffsetDelete request (Kafka 2.4+) to the group's coordinator.

Partitions of topics the group's members still consume are refused by the coordinator
(GROUP_SUBSCRIBED_TO_TOPIC) and reported per partition; the command then exits non-zero.
"""

from __future__ import annotations

import argparse
from typing import Any

from pafka.errors import GroupIdNotFoundError, KafkaApiError, NonEmptyGroupError

HEADERS = ("TOPIC", "PARTITION", "STATUS")


def register(verbs: Any) -> Any:
    parser = verbs.add_parser(
        "delete-offsets", help="delete a group's committed offsets of some topics or partitions"
    )
    parser.add_argument("group")
    parser.add_argument(
        "--topic",
        action="append",
        required=True,
        metavar="T[:P,P...]",
        help="topic or partitions (repeatable)",
    )
    return parser


def delete_offsets(args: argparse.Namespace) -> int:
    from kafka import TopicPartition as KafkaTP
    from kafka import errors as kafka_errors

    from pafka.cli.groups import _admin, _partitions, format_table

    group = args.group
    with _admin(args) as admin:
        partitions = _partitions(admin, args.topic)
        try:
            results = admin.delete_group_offsets(group, [KafkaTP(*tp) for tp in partitions])
        except kafka_errors.GroupIdNotFoundError as exc:
            raise GroupIdNotFoundError(f"consumer group {group!r} does not exist") from exc
        except kafka_errors.NonEmptyGroupError as exc:
            raise NonEmptyGroupError(f"consumer group {group!r} has active members") from exc
    rows = []
    failed = 0
    for tp, error in sorted(results.items(), key=lambda item: (item[0].topic, item[0].partition)):
        ok = error is kafka_errors.NoError
        failed += not ok
        rows.append((tp.topic, tp.partition, "Successful" if ok else f"Error: {error.__name__}"))
    for line in format_table(HEADERS, rows):
        print(line)
    if failed:
        raise KafkaApiError(f"{failed} partition(s) of group {group!r} kept their offsets")
    return 0
