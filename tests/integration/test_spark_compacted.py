"""The Spark source on a compacted, cleaned topic (issue 17): gaps in offsets are not data loss.

A cluster of its own (one broker whose cleaner looks for work every 300 ms, one controller, one
gateway). A batch read and a streaming query (``failOnDataLoss`` left true) of a cleaned topic
get the latest value of every key, offsets increasing with gaps, and no data-loss error; so does
a range that starts and ends on offsets the cleaner removed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from pafka.admin import topics as admin
from tests.integration.compaction import (
    COMPACTED,
    COMPACTION_BROKER_ENV,
    ROLL_MS,
    Latest,
    Stored,
    Writer,
    assert_increasing,
    latest_of,
    replica_records,
    roll_with,
    topic_name,
    updates,
    wait_until,
)
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.test_spark_source import pafka_read, spark

__all__ = ["spark"]  # the session fixture, shared with the source's tests

KEYS = 200


@pytest.fixture(scope="module")
def compacting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "spark-compacted", brokers=1, controllers=1, gateways=1,
        broker_env=COMPACTION_BROKER_ENV,
    ) as handle:  # fmt: skip
        wait_until(lambda: handle.broker_ids() == [1], "the broker registered", 30)
        yield handle


@pytest.fixture(scope="module")
def cleaned(compacting: ClusterHandle) -> tuple[str, Latest, list[Stored]]:
    """A topic of 20 updates to each of 200 keys, cleaned: its name, each key's latest
    (offset, value), and the cleaned log's records."""
    topic = topic_name("spark-compact")
    config = {**COMPACTED, "segment.bytes": "8192", "max.compaction.lag.ms": str(ROLL_MS)}
    admin.create_topic(compacting.zk, topic, -1, -1, config, {0: (1,)})
    compacting.wait_for_leaders(topic, 1)
    writer = Writer(compacting)
    writer.send(topic, updates(KEYS, 20), partition=0)
    roll_with(writer, topic, b"key-00000", b"final")
    expected = writer.of(topic)
    records: list[Stored] = []

    def is_clean() -> bool:
        nonlocal records
        records = replica_records(compacting, 1, topic, 0)
        return latest_of(records) == expected and len(records) <= KEYS + 1

    wait_until(is_clean, f"{topic} is cleaned")
    return topic, expected, records


def stored(rows: list[Any]) -> list[Stored]:
    return sorted(
        (Stored(r.offset, bytes(r.key), bytes(r.value)) for r in rows), key=lambda s: s.offset
    )


def test_batch_reads_of_a_cleaned_topic_are_not_data_loss(
    spark: SparkSession, compacting: ClusterHandle, cleaned: tuple[str, Latest, list[Stored]]
) -> None:
    topic, expected, records = cleaned
    gw = compacting.gateways[0]
    everything = stored(pafka_read(spark, gw, subscribe=topic).collect())
    assert_increasing(everything, "spark")
    assert everything == records
    assert latest_of(everything) == expected

    # A range from one removed offset to another: what the log holds between them.
    offsets = {r.offset for r in records}
    start = next(o for o in range(1, records[-1].offset) if o not in offsets)
    until = next(o for o in range(records[len(records) // 2].offset, 0, -1) if o not in offsets)
    assert start < until
    ranged = pafka_read(
        spark,
        gw,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": start}}),
        endingOffsets=json.dumps({topic: {"0": until}}),
    )
    assert stored(ranged.collect()) == [r for r in records if start <= r.offset < until]


def test_a_stream_of_a_cleaned_topic_reads_latest_values(
    spark: SparkSession,
    compacting: ClusterHandle,
    cleaned: tuple[str, Latest, list[Stored]],
    tmp_path: Path,
) -> None:
    topic, expected, records = cleaned
    seen: list[Any] = []
    stream = (
        spark.readStream.format("pafka")
        .option("gateway", compacting.gateways[0])
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "1000")  # several micro-batches, each over gaps
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(lambda df, _id: seen.extend(df.collect()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(StreamingQueryException):  # read from query.exception()
        query.awaitTermination(120)
    assert not query.isActive
    assert query.exception() is None
    assert stored(seen) == records
    assert latest_of(stored(seen)) == expected
