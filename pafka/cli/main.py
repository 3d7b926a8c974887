"""``pafka``: the one command line of the project (design §5).

Errors a user can cause print one line and exit non-zero; they are mapped here, once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from pafka.cli import (
    acls,
    bench,
    clients,
    cluster,
    configs,
    groups,
    leaders,
    quotas,
    services,
    topics,
    users,
    zookeeper_acls,
)
from pafka.errors import PafkaError

Command = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pafka", description="A Kafka-style commit log coordinated through ZooKeeper."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    services.register(sub)
    cluster.register(sub)
    topics.register(sub)
    clients.register(sub)
    groups.register(sub)
    configs.register(sub)
    quotas.register(sub)
    acls.register(sub)
    leaders.register(sub)
    users.register(sub)
    bench.register(sub)
    zookeeper_acls.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Command = args.handler
    try:
        code = handler(args)
    except PafkaError as exc:
        print(f"pafka {args.command}: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        # kafka-python's errors and connection failures: one line, not a traceback.
        if type(exc).__module__.startswith(("kafka", "kazoo")):
            print(f"pafka {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
        else:
            raise
    raise SystemExit(code)


if __name__ == "__main__":
    main()
