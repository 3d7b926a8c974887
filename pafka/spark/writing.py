"""Writing rows of one Spark task through the gateway (no pyspark here).

Rows are grouped by topic and sent in requests of at most ``maxRecordsPerRequest`` records, each
under an ``Idempotency-Key`` of ``{prefix}:{n}``, where the prefix names the write and the Spark
partition (a batch job: a random id drawn on the driver; a micro-batch: the query id, which
survives restarts from a checkpoint, and the batch id) and ``n`` counts requests in the task.
The same rows in the same order make the same requests under the same keys, so a task or a
whole micro-batch run again writes nothing twice: the gateway answers a repeated key with the
first outcome. A request is done when the gateway answered 200 (acks=all: every in-sync replica
has every record).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pafka.spark.errors import ConnectorError
from pafka.spark.gateway import GatewayClient
from pafka.spark.rows import to_record


@dataclass(frozen=True)
class Written:
    """What one task wrote (returned to the driver in the commit message)."""

    records: int
    requests: int


def produce_rows(
    client: GatewayClient,
    rows: Iterable[Any],
    *,
    key_prefix: str,
    default_topic: str | None,
    columns: frozenset[str],
) -> Written:
    """``rows`` have a ``value`` field and optionally key, topic, partition and headers."""
    size = client.options.max_records_per_request
    pending: dict[str, list[dict[str, Any]]] = {}
    requests = records = 0

    def flush(topic: str) -> None:
        nonlocal requests, records
        batch = pending.pop(topic)
        client.produce(topic, batch, f"{key_prefix}:{requests}")
        requests += 1
        records += len(batch)

    for row in rows:
        topic = _topic(row, default_topic, columns)
        record = to_record(
            row["key"] if "key" in columns else None,
            row["value"],
            row["partition"] if "partition" in columns else None,
            row["headers"] if "headers" in columns else None,
        )
        pending.setdefault(topic, []).append(record)
        if len(pending[topic]) >= size:
            flush(topic)
    for topic in sorted(pending):
        flush(topic)
    return Written(records, requests)


def _topic(row: Any, default: str | None, columns: frozenset[str]) -> str:
    # As in Spark's Kafka sink, the topic option overrides the topic column.
    topic = default or (row["topic"] if "topic" in columns else None)
    if not topic:
        raise ConnectorError("a row has no topic: add a topic column or the topic option")
    return str(topic)
