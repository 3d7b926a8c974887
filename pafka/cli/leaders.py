"""``pafka leaders elect``, the equivalent of kafka-leader-election.sh.

Preferred (the default) or unclean elections for one partition, a topic's partitions or every
partition. Partitions that needed no election are reported as such; any other failure makes
the command exit 1, as Kafka's tool does.
"""

from __future__ import annotations

import argparse
from typing import Any

from pafka.cli.kafka_admin import run_admin
from pafka.cli.target import add_target_arguments, resolve
from pafka.cluster.elect_leaders import ElectionType
from pafka.errors import ConfigError, ElectionNotNeededError, KafkaApiError


def register(sub: Any) -> None:
    parser = sub.add_parser("leaders", help="elect partition leaders")
    verbs = parser.add_subparsers(dest="verb", required=True)
    elect = verbs.add_parser("elect", help="run preferred or unclean leader elections")
    kind = elect.add_mutually_exclusive_group()
    kind.add_argument("--preferred", action="store_true", help="the default")
    kind.add_argument("--unclean", action="store_true")
    elect.add_argument("--topic", help="only this topic (every partition when absent)")
    elect.add_argument("--partition", type=int, help="only this partition of --topic")
    add_target_arguments(elect)
    elect.set_defaults(handler=elect_leaders)


def elect_leaders(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        raise ConfigError("--partition needs --topic")
    kind = ElectionType.UNCLEAN if args.unclean else ElectionType.PREFERRED

    async def work(admin: Any) -> dict[tuple[str, int], KafkaApiError | None]:
        partitions: list[tuple[str, int]] | None = None
        if args.topic is not None and args.partition is not None:
            partitions = [(args.topic, args.partition)]
        elif args.topic is not None:
            info = await admin.cluster.topic(args.topic, refresh=True)
            partitions = [(args.topic, p) for p in sorted(info.partitions)]
        result: dict[tuple[str, int], KafkaApiError | None] = await admin.elect_leaders(
            kind, partitions
        )
        return result

    outcome = run_admin(resolve(args), work)
    elected = [tp for tp, e in outcome.items() if e is None]
    not_needed = [tp for tp, e in outcome.items() if isinstance(e, ElectionNotNeededError)]
    failed = {tp: e for tp, e in outcome.items() if e is not None and tp not in set(not_needed)}
    name = kind.name
    if elected:
        print(f"Successfully completed leader election ({name}) for partitions {_names(elected)}")
    if not_needed:
        print(f"Valid replica already elected for partitions {_names(not_needed)}")
    for (topic, partition), error in sorted(failed.items()):
        print(
            f"Error completing leader election ({name}) for partition {topic}-{partition}: {error}"
        )
    if not outcome:
        print(f"No partition needed a leader election ({name}).")
    return 1 if failed else 0


def _names(partitions: list[tuple[str, int]]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(partitions))
