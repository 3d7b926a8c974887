"""The pafka Spark data source on a local SparkSession against the shared real cluster.

Batch reads return exactly the produced records with their metadata; batch writes land through
the gateway; a streaming query sees records produced while it runs, resumes from its checkpoint
without losing or repeating anything, and a micro-batch run again writes nothing twice.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pafka.spark import register
from pafka.spark.options import parse_write
from pafka.spark.rows import COLUMNS, HEADERS
from pafka.spark.sink import StreamWriter
from tests.integration.conftest import ClusterHandle

BINARY = "application/vnd.kafka.binary.v2+json"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers import pafka from this environment
    session = (
        SparkSession.builder.master("local[2]")
        .appName("pafka-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def produce(gateway: str, topic: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """records: key/value as bytes, optional partition and headers [(name, bytes)]."""
    body = []
    for r in records:
        item: dict[str, Any] = {"value": b64(r["value"])}
        if r.get("key") is not None:
            item["key"] = b64(r["key"])
        if "partition" in r:
            item["partition"] = r["partition"]
        if r.get("headers"):
            item["headers"] = [{"name": n, "value": b64(v)} for n, v in r["headers"]]
        body.append(item)
    response = httpx.post(
        f"{gateway}/topics/{topic}",
        json={"records": body},
        headers={"Content-Type": BINARY},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["offsets"])


def read_all(gateway: str, topic: str) -> list[dict[str, Any]]:
    partitions = httpx.get(f"{gateway}/topics/{topic}/partitions", timeout=10).json()
    out = []
    for p in partitions:
        offset = 0
        while True:
            page = httpx.get(
                f"{gateway}/topics/{topic}/partitions/{p['partition']}/records",
                params={"offset": offset, "max_records": 1000},
                headers={"Accept": BINARY},
                timeout=10,
            ).json()
            out.extend(page["records"])
            if page["next_offset"] >= page["high_watermark"] or not page["records"]:
                break
            offset = page["next_offset"]
    return out


def values(records: list[dict[str, Any]]) -> list[bytes]:
    return [base64.b64decode(r["value"]) for r in records]


def wait_for(check: Callable[[], bool], query: Any = None, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if query is not None and query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.3)


def pafka_read(spark: SparkSession, gateway: str, **options: str) -> DataFrame:
    return spark.read.format("pafka").option("gateway", gateway).options(**options).load()


# -- batch -------------------------------------------------------------------------------------


def test_batch_read_of_a_range_returns_exactly_the_records(
    spark: SparkSession, cluster: ClusterHandle
) -> None:
    gw = cluster.gateways[0]
    cluster.create_topic("spark-batch", partitions=3, replication_factor=3)
    produced = []
    for p in range(3):
        records = [
            {
                "key": f"k{p}-{i}".encode(),
                "value": f"v{p}-{i}".encode(),
                "partition": p,
                "headers": [("h", f"{i}".encode())] if i % 2 else [],
            }
            for i in range(10)
        ]
        offsets = produce(gw, "spark-batch", records)
        produced += [(r, o["offset"]) for r, o in zip(records, offsets, strict=True)]

    starting = json.dumps({"spark-batch": {"0": 2, "1": -2}})
    ending = json.dumps({"spark-batch": {"0": 7, "2": 4}})
    df = pafka_read(
        spark,
        ",".join(cluster.gateways),
        subscribe="spark-batch",
        startingOffsets=starting,
        endingOffsets=ending,
        includeHeaders="true",
    )
    assert df.columns == [*COLUMNS, HEADERS]
    rows = df.collect()
    got = sorted(
        (
            r.partition,
            r.offset,
            bytes(r.key),
            bytes(r.value),
            r.topic,
            r.timestampType,
            [(h.key, bytes(h.value)) for h in r.headers],
        )
        for r in rows
    )
    expected = sorted(
        (r["partition"], o, r["key"], r["value"], "spark-batch", 0, r["headers"])
        for r, o in produced
        if (r["partition"] == 0 and 2 <= o < 7)
        or r["partition"] == 1
        or (r["partition"] == 2 and o < 4)
    )
    assert got == expected
    now = time.time()
    assert all(now - 600 < r.timestamp.timestamp() <= now + 5 for r in rows)

    split = pafka_read(spark, gw, subscribe="spark-batch", minPartitions="7")
    assert split.rdd.getNumPartitions() >= 7
    assert split.count() == 30
    pattern = pafka_read(spark, gw, subscribePattern="spark-ba.*")
    assert pattern.count() == 30
    assigned = pafka_read(spark, gw, assign=json.dumps({"spark-batch": [1]}))
    assert sorted(r.offset for r in assigned.select("offset").collect()) == list(range(10))


def test_batch_read_errors_are_clear(spark: SparkSession, cluster: ClusterHandle) -> None:
    gw = cluster.gateways[0]
    with pytest.raises(Exception, match="'spark-nope' does not exist"):
        pafka_read(spark, gw, subscribe="spark-nope").collect()
    with pytest.raises(Exception, match="no pafka gateway answered"):
        pafka_read(spark, "http://127.0.0.1:9", subscribe="t", requestTimeoutMs="300").collect()
    with pytest.raises(Exception, match="minPartitions must be a positive integer"):
        pafka_read(spark, gw, subscribe="t", minPartitions="zero").collect()
    with pytest.raises(Exception, match="exactly one of subscribe"):
        pafka_read(spark, gw).collect()


def test_batch_write_produces_through_the_gateway(
    spark: SparkSession, cluster: ClusterHandle
) -> None:
    gw = cluster.gateways[1]
    cluster.create_topic("spark-write", partitions=2, replication_factor=3)
    rows = [
        Row(
            key=f"k{i}",
            value=f"v{i}".encode(),
            partition=i % 2,
            headers=[Row(key="n", value=str(i).encode())],
        )
        for i in range(20)
    ]
    df = spark.createDataFrame(
        rows,
        "key string, value binary, partition int, "
        "headers array<struct<key: string, value: binary>>",
    )
    df.write.format("pafka").mode("append").option("gateway", gw).option(
        "topic", "spark-write"
    ).save()
    records = read_all(gw, "spark-write")
    assert sorted(values(records)) == sorted(f"v{i}".encode() for i in range(20))
    for r in records:
        i = int(base64.b64decode(r["value"])[1:])
        assert r["partition"] == i % 2
        assert base64.b64decode(r["key"]) == f"k{i}".encode()
        assert r["headers"] == [{"name": "n", "value": b64(str(i).encode())}]

    with pytest.raises(Exception, match="needs a value column"):
        spark.createDataFrame([("a",)], "key string").write.format("pafka").mode("append").option(
            "gateway", gw
        ).option("topic", "spark-write").save()


# -- streaming ---------------------------------------------------------------------------------


def _start(spark: SparkSession, gw: str, checkpoint: Path, **source: str) -> Any:
    stream = (
        spark.readStream.format("pafka")
        .option("gateway", gw)
        .option("subscribe", "spark-in")
        .option("startingOffsets", "earliest")
        .options(**source)
        .load()
    )
    upper = stream.select("key", F.upper(F.col("value").cast("string")).alias("value"))
    return (
        upper.writeStream.format("pafka")
        .option("gateway", gw)
        .option("topic", "spark-out")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def test_stream_runs_restarts_and_writes_each_result_once(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    gw = cluster.gateways[0]
    cluster.create_topic("spark-in", partitions=2, replication_factor=3)
    cluster.create_topic("spark-out", partitions=1, replication_factor=3)

    def send(start: int, stop: int) -> None:
        produce(
            gw, "spark-in", [{"key": b"k%d" % i, "value": b"e%d" % i} for i in range(start, stop)]
        )

    def expected(n: int) -> list[bytes]:
        return sorted(b"E%d" % i for i in range(n))

    def output() -> list[bytes]:
        return sorted(values(read_all(gw, "spark-out")))

    checkpoint = tmp_path / "checkpoint"
    send(0, 10)
    query = _start(spark, gw, checkpoint)
    try:
        wait_for(lambda: len(output()) >= 10, query)
        send(10, 25)  # while the query runs
        wait_for(lambda: len(output()) >= 25, query)
    finally:
        query.stop()
    assert output() == expected(25)

    send(25, 40)  # while it is stopped
    query = _start(spark, gw, checkpoint)
    try:
        wait_for(lambda: len(output()) >= 40, query)
        query.processAllAvailable()
    finally:
        query.stop()
    assert output() == expected(40)

    # Forget that the last micro-batch was committed: Spark runs it again, with the same batch
    # id and the same records, and the writer's idempotency keys make that write nothing.
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert (checkpoint / "offsets" / str(last)).exists()
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    query = _start(spark, gw, checkpoint)
    try:
        wait_for(lambda: (checkpoint / "commits" / str(last)).exists(), query)
        query.processAllAvailable()
    finally:
        query.stop()
    rerun = [p for p in query.recentProgress if p["batchId"] == last]
    assert rerun and rerun[0]["numInputRows"] > 0  # the batch really wrote its records again
    assert output() == expected(40)


def test_max_offsets_per_trigger_caps_micro_batches(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    gw = cluster.gateways[1]
    cluster.create_topic("spark-capped", partitions=2, replication_factor=3)
    produce(gw, "spark-capped", [{"value": b"x%d" % i} for i in range(23)])
    seen: list[int] = []
    stream = (
        spark.readStream.format("pafka")
        .option("gateway", gw)
        .option("subscribe", "spark-capped")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "6")
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(lambda df, _id: seen.append(df.count()))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert sum(seen) == 23
    assert max(seen) <= 6
    assert len([n for n in seen if n]) == 4


def test_stream_writer_retried_for_a_batch_id_adds_nothing(cluster: ClusterHandle) -> None:
    gw = cluster.gateways[1]
    cluster.create_topic("spark-retry", partitions=1, replication_factor=3)
    from pyspark.sql.types import BinaryType, StructField, StructType

    schema = StructType([StructField("value", BinaryType())])
    writer = StreamWriter(
        {
            "gateway": ",".join(cluster.gateways),
            "topic": "spark-retry",
            "maxRecordsPerRequest": "4",
        },
        schema,
    )
    assert parse_write({"gateway": gw, "topic": "spark-retry"}).topic == "spark-retry"
    rows = [Row(value=b"r%d" % i) for i in range(10)]
    first = writer.write_batch(iter(rows), "q-1", 7, 0)
    again = writer.write_batch(iter(rows), "q-1", 7, 0)
    assert (first.records, first.requests) == (again.records, again.requests) == (10, 3)
    assert sorted(values(read_all(gw, "spark-retry"))) == sorted(r.value for r in rows)
    writer.write_batch(iter(rows[:2]), "q-1", 8, 0)  # the next batch is written
    assert len(read_all(gw, "spark-retry")) == 12
