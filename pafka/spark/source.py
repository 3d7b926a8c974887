"""The ``pafka`` data source for Spark: batch and streaming reads, batch and streaming writes.

::

    from pafka.spark import register
    register(spark)
    df = (spark.read.format("pafka").option("gateway", "http://gw:8082")
          .option("subscribe", "events").load())

Rows have the schema of Spark's Kafka source (``key``, ``value`` binary, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, and ``headers`` with
``includeHeaders``); the options are listed in :mod:`pafka.spark.options`.

The driver plans (:mod:`pafka.spark.planning`: offset ranges, splits, per-trigger caps) from the
partitions' offsets; each Spark task reads one range through the gateway's stateless range
endpoint in its record-batch format, decoded into Arrow in the task (:mod:`pafka.spark.reading`).
Streaming offsets are ``{topic: {partition: offset}}``; a query keeps no state in pafka (no
consumer group): its position is its checkpoint. Writes are in :mod:`pafka.spark.sink`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from pafka.spark import planning
from pafka.spark.gateway import GatewayClient
from pafka.spark.options import EARLIEST, LATEST, ReadOptions, TopicPartition, parse_read
from pafka.spark.planning import OffsetRange
from pafka.spark.reading import read_arrow
from pafka.spark.rows import read_schema

log = logging.getLogger(__name__)
FORMAT = "pafka"


class RangePartition(InputPartition):
    """One Spark partition: an offset range of one topic-partition."""

    def __init__(self, value: OffsetRange) -> None:
        super().__init__(value)
        self.range = value


class PafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        headers = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return read_schema(headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_read(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_read(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pafka.spark.sink import BatchWriter

        return BatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pafka.spark.sink import StreamWriter

        return StreamWriter(self.options, schema)


def _read(options: ReadOptions, partition: InputPartition) -> Iterator[Any]:
    """Arrow record batches, one per gateway answer, decoded from the record batches the
    gateway sends as stored (Spark takes them without converting each row in Python)."""
    assert isinstance(partition, RangePartition)
    with GatewayClient(options.gateway, first=partition.range.partition) as client:
        yield from read_arrow(
            client,
            partition.range,
            include_headers=options.include_headers,
            fail_on_data_loss=options.fail_on_data_loss,
        )


class BatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every subscribed partition, resolved once
    when the query is planned."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        with GatewayClient(opts.gateway) as client:
            bounds = client.bounds(client.subscribed(opts.subscription))
        starts = planning.resolve(opts.starting, bounds, EARLIEST, "startingOffsets")
        ends = planning.resolve(opts.ending, bounds, LATEST, "endingOffsets")
        ranges = planning.plan(starts, ends, bounds, fail_on_data_loss=opts.fail_on_data_loss)
        return [RangePartition(r) for r in planning.split(ranges, opts.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, partition)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of ``[previous end, latest)`` per partition, capped by
    ``maxOffsetsPerTrigger``; partitions that appear later (new topics matching the pattern, added
    partitions) are read from their beginning."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._gateway: GatewayClient | None = None  # opened on the driver when first needed
        self._last: dict[str, dict[str, int]] | None = None
        self._available_now: dict[TopicPartition, int] | None = None

    def initialOffset(self) -> dict:
        bounds = self._bounds()
        default = LATEST if self.options.starting == "latest" else EARLIEST
        starts = planning.resolve(self.options.starting, bounds, default, "startingOffsets")
        self._last = planning.encode_offsets(starts)
        return self._last

    def getDefaultReadLimit(self) -> ReadLimit:
        cap = self.options.max_offsets_per_trigger
        return ReadMaxRows(cap) if cap else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        # Spark before 4.2 calls latestOffset() with no arguments: the start is then where the
        # previous batch ended (or the initial offset), and the cap comes from the options. Not
        # knowing the start (a query resumed from its checkpoint), it reads all that is there.
        if start is None:
            if self._last is None:
                start, limit = {}, ReadAllAvailable()
            else:
                start, limit = self._last, self.getDefaultReadLimit()
        bounds = self._bounds()
        latest = {tp: end for tp, (_, end) in bounds.items()}
        if self._available_now is not None:
            latest = {tp: min(end, self._available_now.get(tp, end)) for tp, end in latest.items()}
        begun = planning.decode_offsets(start)
        starts = {tp: begun.get(tp, bounds[tp][0]) for tp in latest}
        # A partition no longer listed (topic deleted) keeps its last offset.
        ends = {**begun, **latest}
        if isinstance(limit, ReadMaxRows):
            ends = {**begun, **planning.limit(starts, latest, limit.max_rows)}
        ends = {tp: max(end, begun.get(tp, end)) for tp, end in ends.items()}
        self._last = planning.encode_offsets(ends)
        return self._last

    def reportLatestOffset(self) -> dict | None:
        return planning.encode_offsets({tp: end for tp, (_, end) in self._bounds().items()})

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = {tp: end for tp, (_, end) in self._bounds().items()}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begun, ends = planning.decode_offsets(start), planning.decode_offsets(end)
        moved = {tp: e for tp, e in ends.items() if e > begun.get(tp, 0)}
        if not moved:
            return []
        bounds = self._client.bounds(sorted(moved))
        # A partition first seen in this batch starts at its beginning: not data loss.
        starts = {tp: begun.get(tp, bounds[tp][0]) for tp in moved}
        bounds = {tp: (b, max(e, moved[tp])) for tp, (b, e) in bounds.items()}
        ranges = planning.plan(
            starts, moved, bounds, fail_on_data_loss=self.options.fail_on_data_loss
        )
        return [RangePartition(r) for r in planning.split(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        log.debug("pafka stream committed through %s", end)

    def stop(self) -> None:
        if self._gateway is not None:
            self._gateway.close()
            self._gateway = None

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to its Python workers; an HTTP client does not travel.
        return {**self.__dict__, "_gateway": None}

    @property
    def _client(self) -> GatewayClient:
        if self._gateway is None:
            self._gateway = GatewayClient(self.options.gateway)
        return self._gateway

    def _bounds(self) -> dict[TopicPartition, tuple[int, int]]:
        return self._client.bounds(self._client.subscribed(self.options.subscription))
