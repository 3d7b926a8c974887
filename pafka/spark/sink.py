"""Writing DataFrames to pafka, batch and streaming, through the gateway with acks=all.

Columns as in Spark's Kafka sink: ``value`` (binary or string) is required; ``key`` (binary or
string), ``topic`` (string; the ``topic`` option overrides it), ``partition`` (int; else the
gateway partitions by key, as Kafka's default partitioner does) and ``headers``
(array<struct<key string, value binary>>) are optional.

Every request carries an ``Idempotency-Key`` (see :mod:`pafka.spark.writing`): a batch write
keys its requests by a random id drawn on the driver, so a retried task writes nothing twice; a
streaming write keys them by the query id (kept in the checkpoint), the micro-batch id and the
Spark partition, so a micro-batch that Spark runs again (a retried task, or a restart from the
checkpoint before the batch was committed) writes nothing twice. Since records are acknowledged
before a task ends, ``commit`` has nothing left to do and ``abort`` cannot take records back.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
)

from pafka.spark.errors import ConnectorError, OptionError
from pafka.spark.gateway import GatewayClient
from pafka.spark.options import WriteOptions, parse_write
from pafka.spark.writing import produce_rows

log = logging.getLogger(__name__)

# Local properties Spark sets on the tasks of a micro-batch.
QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"


@dataclass
class Committed(WriterCommitMessage):
    partition: int
    records: int
    requests: int


def _columns(schema: StructType, options: WriteOptions) -> frozenset[str]:
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if "value" not in fields:
        raise OptionError("a pafka write needs a value column (binary or string)")
    if "topic" not in fields and not options.topic:
        raise OptionError("a pafka write needs the topic option or a topic column")
    text_or_bytes = (BinaryType, StringType)
    expected: dict[str, tuple[type[DataType], ...]] = {
        "key": text_or_bytes,
        "value": text_or_bytes,
        "topic": (StringType,),
        "partition": (IntegerType,),
        "headers": (ArrayType,),
    }
    for name, types in expected.items():
        if name in fields and not isinstance(fields[name], types):
            allowed = " or ".join(t.typeName() for t in types)
            raise OptionError(f"column {name} is {fields[name].simpleString()}, must be {allowed}")
    return frozenset(n for n in expected if n in fields)


def _task() -> TaskContext:
    context = TaskContext.get()
    if context is None:
        raise ConnectorError("pafka writers run inside Spark tasks")
    return context


def _write(
    options: WriteOptions, columns: frozenset[str], rows: Iterator[Row], prefix: str, partition: int
) -> Committed:
    with GatewayClient(options.gateway, first=partition) as client:
        written = produce_rows(
            client,
            rows,
            key_prefix=f"{prefix}:{partition}",
            default_topic=options.topic,
            columns=columns,
        )
    return Committed(partition, written.records, written.requests)


class BatchWriter(DataSourceWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_write(options)
        self.columns = _columns(schema, self.options)
        self.job = uuid.uuid4().hex  # drawn on the driver: every attempt of a task shares it

    def write(self, iterator: Iterator[Row]) -> Committed:
        prefix = f"spark:{self.job}"
        return _write(self.options, self.columns, iterator, prefix, _task().partitionId())

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, Committed))
        log.info("pafka write %s: %d records", self.job, total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("pafka write %s aborted; acknowledged records stay written", self.job)


class StreamWriter(DataSourceStreamWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_write(options)
        self.columns = _columns(schema, self.options)

    def write(self, iterator: Iterator[Row]) -> Committed:
        task = _task()
        query, batch = task.getLocalProperty(QUERY_ID), task.getLocalProperty(BATCH_ID)
        if not query or batch is None:
            raise ConnectorError("the pafka stream writer found no query or batch id")
        return self.write_batch(iterator, query, int(batch), task.partitionId())

    def write_batch(
        self, rows: Iterator[Row], query_id: str, batch_id: int, partition: int
    ) -> Committed:
        """Write the rows of Spark partition ``partition`` of micro-batch ``batch_id``."""
        prefix = f"spark:{query_id}:{batch_id}"
        return _write(self.options, self.columns, rows, prefix, partition)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.records for m in messages if isinstance(m, Committed))
        log.info("pafka micro-batch %d: %d records", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("pafka micro-batch %d aborted; acknowledged records stay written", batchId)
