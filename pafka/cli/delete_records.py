"""``pafka topics delete-records``, the equivalent of kafka-delete-records.sh: one partition
from ``--topic/--partition/--offset``, or many from Kafka's offset JSON file. Each partition's
new low watermark or error is printed; any error makes the command exit 1.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pafka.cli.kafka_admin import run_admin
from pafka.cli.target import resolve
from pafka.errors import ConfigError, KafkaApiError


def offsets_from_json(text: str) -> dict[tuple[str, int], int]:
    """Kafka's file: ``{"partitions": [{"topic", "partition", "offset"}], "version": 1}``."""
    try:
        payload = json.loads(text)
        entries = payload["partitions"]
        offsets = {(str(e["topic"]), int(e["partition"])): int(e["offset"]) for e in entries}
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the offset JSON file is not Kafka's format: {exc}") from exc
    if len(offsets) != len(entries):
        raise ConfigError("the offset JSON file names a partition more than once")
    if not offsets:
        raise ConfigError("the offset JSON file names no partition")
    return offsets


def _offsets(args: argparse.Namespace) -> dict[tuple[str, int], int]:
    single = (args.topic, args.partition, args.offset)
    if args.offset_json_file is not None:
        if any(v is not None for v in single):
            raise ConfigError("give --offset-json-file or --topic/--partition/--offset, not both")
        try:
            return offsets_from_json(Path(args.offset_json_file).read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read {args.offset_json_file}: {exc}") from exc
    if any(v is None for v in single):
        raise ConfigError("delete-records needs --topic, --partition and --offset")
    return {(args.topic, args.partition): args.offset}


def delete_records(args: argparse.Namespace) -> int:
    offsets = _offsets(args)

    async def work(admin: Any) -> dict[tuple[str, int], int | KafkaApiError]:
        result: dict[tuple[str, int], int | KafkaApiError] = await admin.delete_records(offsets)
        return result

    outcome = run_admin(resolve(args), work)
    print("Records delete operation completed:")
    failed = False
    for (topic, partition), result in sorted(outcome.items()):
        if isinstance(result, KafkaApiError):
            failed = True
            print(f"partition: {topic}-{partition}\terror: {result}")
        else:
            print(f"partition: {topic}-{partition}\tlow_watermark: {result}")
    return 1 if failed else 0
