"""The example pipelines in spark-jobs/: their pure transforms on a local SparkSession, and each
job end to end on small data through the shared real cluster."""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, SparkSession

from tests.integration.conftest import ClusterHandle
from tests.integration.test_spark_source import produce, read_all, spark, values

__all__ = ["spark"]  # the session fixture, shared with the source's tests

JOBS = Path(__file__).resolve().parents[2] / "spark-jobs"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def job(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, JOBS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def event(key: str, amount: float, seconds: int) -> bytes:
    when = (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"key": key, "amount": amount, "event_time": when}).encode()


def kafka_rows(spark: SparkSession, payloads: list[bytes]) -> DataFrame:
    rows = [(None, p, "t", 0, i, T0, 0, [("h", b"x")]) for i, p in enumerate(payloads)]
    return spark.createDataFrame(
        rows,
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int, headers array<struct<key: string, value: binary>>",
    )


def test_windowed_totals_transform(spark: SparkSession) -> None:
    windows = job("event_windows")
    payloads = [
        event("a", 1.5, 5),
        event("a", 2.0, 50),
        event("b", 4.0, 59),
        event("a", 1.0, 61),
        b"not json",
        json.dumps({"amount": 3}).encode(),
    ]
    out = windows.windowed_totals(kafka_rows(spark, payloads), "1 minute", "1 minute")
    got = sorted(
        ((r.key, json.loads(r.value)) for r in out.collect()),
        key=lambda kv: kv[1]["window_start"] + kv[0],
    )
    assert got == [
        (
            "a",
            {
                "key": "a",
                "window_start": "2026-03-01T12:00:00Z",
                "window_end": "2026-03-01T12:01:00Z",
                "events": 2,
                "amount": 3.5,
            },
        ),
        (
            "b",
            {
                "key": "b",
                "window_start": "2026-03-01T12:00:00Z",
                "window_end": "2026-03-01T12:01:00Z",
                "events": 1,
                "amount": 4.0,
            },
        ),
        (
            "a",
            {
                "key": "a",
                "window_start": "2026-03-01T12:01:00Z",
                "window_end": "2026-03-01T12:02:00Z",
                "events": 1,
                "amount": 1.0,
            },
        ),
    ]


def test_records_table_transform(spark: SparkSession) -> None:
    parquet = job("topic_to_parquet")
    out = parquet.records_table(kafka_rows(spark, [b"v0", b"v1"])).collect()
    assert [(r.value, r.offset, r.date.isoformat()) for r in out] == [
        ("v0", 0, "2026-03-01"),
        ("v1", 1, "2026-03-01"),
    ]
    assert [(h.key, h.value) for h in out[0].headers] == [("h", "x")]


def test_event_windows_job_end_to_end(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    gw = cluster.gateways[0]
    cluster.create_topic("job-events", partitions=2, replication_factor=3)
    cluster.create_topic("job-totals", partitions=1, replication_factor=3)
    sent = [event("a", 1.0, s) for s in (1, 20, 40)] + [event("b", 2.5, 30)]
    sent.append(event("c", 0.0, 600))  # moves the watermark past the first window
    produce(gw, "job-events", [{"key": b"k", "value": v} for v in sent])
    args = [
        "--gateway",
        gw,
        "--input",
        "job-events",
        "--output",
        "job-totals",
        "--checkpoint",
        str(tmp_path / "cp"),
        "--available-now",
    ]
    query = job("event_windows").main(args, spark)
    query.awaitTermination(120)
    assert query.exception() is None
    totals = sorted(
        (json.loads(v) for v in values(read_all(gw, "job-totals"))), key=lambda t: t["key"]
    )
    assert [(t["key"], t["events"], t["amount"]) for t in totals] == [("a", 3, 3.0), ("b", 1, 2.5)]


def test_topic_to_parquet_job_end_to_end(
    spark: SparkSession, cluster: ClusterHandle, tmp_path: Path
) -> None:
    gw = cluster.gateways[1]
    cluster.create_topic("job-parquet", partitions=2, replication_factor=3)
    produce(gw, "job-parquet", [{"key": b"k%d" % i, "value": b"v%d" % i} for i in range(12)])
    output = tmp_path / "out"
    job("topic_to_parquet").main(
        [
            "--gateway",
            gw,
            "--topic",
            "job-parquet",
            "--output",
            str(output),
            "--ending-offsets",
            json.dumps({"job-parquet": {"0": -1, "1": 3}}),
        ],
        spark,
    )
    table = spark.read.parquet(str(output))
    rows = table.collect()
    offsets = {r.partition: 0 for r in rows}
    for r in rows:
        offsets[r.partition] += 1
    assert offsets[1] == 3
    assert len(rows) == 3 + len([r for r in read_all(gw, "job-parquet") if r["partition"] == 0])
    assert {r.topic for r in rows} == {"job-parquet"}
    assert all(r.value == "v" + r.key[1:] for r in rows)
