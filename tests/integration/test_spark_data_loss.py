"""failOnDataLoss against records the broker's retention really deleted.

A cluster of its own (one broker checking retention every 200 ms, one controller, one gateway):
topics with tiny segments and ``retention.bytes``, so that producing enough records makes the
broker delete whole old segments and move the log start offset. Then a batch read and a
streaming query resumed from its checkpoint both need offsets that are gone: with
``failOnDataLoss=true`` they fail naming the lost range, with ``false`` they warn and return
exactly the records that survived.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("pyspark")

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.test_spark_source import produce, spark

__all__ = ["spark"]  # the session fixture, shared with the source's tests

RETENTION_CHECK_MS = 200
# A segment holds about three of the one-record batches below; retention keeps about four.
SEGMENT_BYTES = 1000
RETENTION_BYTES = 1000
PAYLOAD = 200


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory,
        "spark-loss",
        brokers=1,
        controllers=1,
        gateways=1,
        broker_env={"PAFKA_BROKER_RETENTION_CHECK_INTERVAL_MS": str(RETENTION_CHECK_MS)},
    ) as handle:
        deadline = time.monotonic() + 30
        while not handle.broker_ids():  # ready, but registering may lag on a busy machine
            assert time.monotonic() < deadline, handle.local.dump_logs()
            time.sleep(0.2)
        yield handle


def create(cluster: ClusterHandle, topic: str) -> None:
    config = {"segment.bytes": str(SEGMENT_BYTES), "retention.bytes": str(RETENTION_BYTES)}
    cluster.create_topic(topic, partitions=1, replication_factor=1, config=config)


def send(gateway: str, topic: str, start: int, stop: int) -> None:
    """One request, so one batch, per record: segments roll every few records."""
    for i in range(start, stop):
        produce(gateway, topic, [{"value": b"%04d" % i + b"." * PAYLOAD}])


def log_start(gateway: str, topic: str) -> int:
    body = httpx.get(f"{gateway}/topics/{topic}/partitions/0/offsets", timeout=10).json()
    return int(body["beginning_offset"])


def wait_for_retention(gateway: str, topic: str, past: int) -> int:
    """The log start offset once retention has deleted segments beyond ``past``."""
    deadline = time.monotonic() + 30
    while (start := log_start(gateway, topic)) <= past:
        assert time.monotonic() < deadline, f"retention left {topic} starting at {start}"
        time.sleep(RETENTION_CHECK_MS / 1000)
    # One pass deletes every segment it may; give it a pass more to be sure it is done.
    time.sleep(3 * RETENTION_CHECK_MS / 1000)
    return log_start(gateway, topic)


def assert_warned(request: pytest.FixtureRequest, text: str) -> None:
    """The connector's warning reached the Spark workers' stderr. Spark started its JVM, which
    relays the Python workers' stderr, under pytest's session-wide capture, so the warning is
    read from there (``capfd`` sees only this process's writes); with capturing off (-s) the
    warning goes to the terminal and cannot be checked."""
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if capture is None or request.config.getoption("capture") != "fd":
        return
    seen = ""
    deadline = time.monotonic() + 10  # the JVM relays worker output from a thread of its own
    while text not in seen and time.monotonic() < deadline:
        seen += capture.read_global_capture()[1]
        time.sleep(0.1)
    assert text in seen, seen


def numbers(rows: list[Any]) -> list[tuple[int, int]]:
    """(offset, the number written into the value) of each row, in offset order."""
    return sorted((r.offset, int(bytes(r.value)[:4])) for r in rows)


def test_batch_read_of_deleted_offsets(
    spark: SparkSession, lossy: ClusterHandle, request: pytest.FixtureRequest
) -> None:
    gw = lossy.gateways[0]
    create(lossy, "loss-batch")
    send(gw, "loss-batch", 0, 30)
    start = wait_for_retention(gw, "loss-batch", 0)
    assert 0 < start < 30

    def read(fail: str) -> DataFrame:
        return (
            spark.read.format("pafka")
            .option("gateway", gw)
            .option("subscribe", "loss-batch")
            .option("startingOffsets", json.dumps({"loss-batch": {"0": 0}}))
            .option("failOnDataLoss", fail)
            .load()
        )

    with pytest.raises(Exception, match=rf"offsets 0 to {start - 1} of loss-batch-0 were deleted"):
        read("true").collect()

    rows = read("false").collect()
    assert numbers(rows) == [(o, o) for o in range(start, 30)]
    assert_warned(request, f"skipping offsets 0 to {start - 1} of loss-batch-0: deleted")

    # Reading from where the log starts now is not loss.
    earliest = spark.read.format("pafka").option("gateway", gw).option("subscribe", "loss-batch")
    assert earliest.load().count() == 30 - start


def test_stream_resumed_past_deleted_offsets(
    spark: SparkSession, lossy: ClusterHandle, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    gw = lossy.gateways[0]
    create(lossy, "loss-stream")
    checkpoint = tmp_path / "checkpoint"
    seen: list[Any] = []

    def run(fail: str) -> Any:
        stream = (
            spark.readStream.format("pafka")
            .option("gateway", gw)
            .option("subscribe", "loss-stream")
            .option("startingOffsets", "earliest")
            .option("failOnDataLoss", fail)
            .load()
        )
        query = (
            stream.writeStream.foreachBatch(lambda df, _id: seen.extend(df.collect()))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        with contextlib.suppress(StreamingQueryException):  # read from query.exception()
            query.awaitTermination(120)
        assert not query.isActive
        return query

    send(gw, "loss-stream", 0, 2)  # one segment: nothing for retention yet
    assert run("true").exception() is None
    assert numbers(seen) == [(0, 0), (1, 1)]

    # While the query is stopped, retention deletes offsets it has not read.
    send(gw, "loss-stream", 2, 32)
    start = wait_for_retention(gw, "loss-stream", 2)
    assert 2 < start < 32

    seen.clear()
    failed = run("true").exception()
    assert failed is not None
    assert f"offsets 2 to {start - 1} of loss-stream-0 were deleted" in str(failed)
    assert seen == []

    assert run("false").exception() is None
    assert numbers(seen) == [(o, o) for o in range(start, 32)]
    assert_warned(request, f"skipping offsets 2 to {start - 1} of loss-stream-0: deleted")
