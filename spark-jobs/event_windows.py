"""Streaming job: per-key totals of JSON events over event-time windows, from one topic to another.

Input records have JSON values ``{"key": "user-1", "amount": 12.5, "event_time":
"2026-01-01T10:00:05Z"}`` (records that are not such JSON are dropped). For every window of
``--window`` and key, one result is written once the watermark (the latest event time seen, less
``--watermark``) has passed the window's end: key ``user-1``, value ``{"key": "user-1",
"window_start": ..., "window_end": ..., "events": 3, "amount": 40.5}``. The pafka source and
sink make it exactly once: a restart from ``--checkpoint`` reads the same records again and the
sink's idempotency keys write each micro-batch's results once.

Run locally (the ``spark`` extra installed; a gateway on 127.0.0.1:8082)::

    .venv/bin/python spark-jobs/event_windows.py --gateway http://127.0.0.1:8082 \\
        --input events --output event-totals --checkpoint /tmp/event-windows

A gateway started with bearer tokens needs ``PAFKA_SPARK_TOKEN`` set to one (on Kubernetes, the
chart's ``spark.tokenSecret`` puts a Secret's token there in the driver pod).

On Kubernetes it runs in the Spark job image (``docker build --target spark -t pafka-spark .``,
which holds this file at /opt/pafka/spark-jobs/) with the chart's driver account
(``--set spark.enabled=true``); the checkpoint must outlive the driver pod (shared storage).
With the Kubeflow spark-operator installed, the chart submits it as a SparkApplication::

    helm upgrade --install pafka charts/pafka -n pafka --set spark.enabled=true \\
        --set spark.eventWindows.enabled=true \\
        --set spark.eventWindows.checkpoint=s3a://bucket/checkpoints/event-windows

The same submission with spark-submit (from the image: ``docker run pafka-spark spark-submit
...``, or any Spark 4 distribution)::

    spark-submit --master k8s://https://$KUBERNETES_API:6443 --deploy-mode cluster \\
        --name pafka-event-windows \\
        --conf spark.kubernetes.namespace=pafka \\
        --conf spark.kubernetes.container.image=pafka-spark:0.1.0 \\
        --conf spark.kubernetes.authenticate.driver.serviceAccountName=pafka-spark \\
        --conf spark.executor.instances=2 \\
        local:///opt/pafka/spark-jobs/event_windows.py \\
        --gateway http://pafka-gateway.pafka.svc.cluster.local:8082 \\
        --input events --output event-totals \\
        --checkpoint s3a://bucket/checkpoints/event-windows
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from pafka.spark import register
from pafka.spark.options import token_from_env

EVENT_SCHEMA = "key string, amount double, event_time timestamp"


def windowed_totals(records: DataFrame, window: str, watermark: str) -> DataFrame:
    """Rows of Spark's Kafka schema in; ``key`` and JSON ``value`` strings out, one row per
    (window, key) with the number of events and their summed amount."""
    events = (
        records.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
        .select("e.*")
        .where(F.col("key").isNotNull() & F.col("event_time").isNotNull())
    )
    totals = (
        events.withWatermark("event_time", watermark)
        .groupBy(F.window("event_time", window).alias("w"), "key")
        .agg(F.count(F.lit(1)).alias("events"), F.sum("amount").alias("amount"))
    )
    result = F.struct(
        "key",
        _utc_text("w.start").alias("window_start"),
        _utc_text("w.end").alias("window_end"),
        "events",
        "amount",
    )
    return totals.select("key", F.to_json(result).alias("value"))


def _utc_text(column: str) -> Column:
    """ISO-8601 in UTC, whatever the session's time zone."""
    utc = F.to_utc_timestamp(column, F.current_timezone())
    return F.date_format(utc, "yyyy-MM-dd'T'HH:mm:ss'Z'")


def extract(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    return (
        spark.readStream.format("pafka")
        .option("gateway", args.gateway)
        .options(**token_from_env(os.environ))
        .option("subscribe", args.input)
        .option("startingOffsets", args.starting_offsets)
        .load()
    )


def load(results: DataFrame, args: argparse.Namespace) -> StreamingQuery:
    writer = (
        results.writeStream.format("pafka")
        .outputMode("append")
        .option("gateway", args.gateway)
        .options(**token_from_env(os.environ))
        .option("topic", args.output)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=args.trigger)
    return writer.start()


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gateway", required=True, help="pafka gateway URL(s), comma-separated")
    parser.add_argument("--input", required=True, help="topic of JSON events")
    parser.add_argument("--output", required=True, help="topic for the windowed totals")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint location")
    parser.add_argument("--window", default="1 minute")
    parser.add_argument("--watermark", default="1 minute", help="how late events may come")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--trigger", default="10 seconds", help="micro-batch interval")
    parser.add_argument(
        "--available-now", action="store_true", help="process what is there, then stop"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> StreamingQuery:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = spark or SparkSession.builder.appName("pafka-event-windows").getOrCreate()
    register(spark)
    query = load(windowed_totals(extract(spark, args), args.window, args.watermark), args)
    if argv is None:
        query.awaitTermination()
    return query


if __name__ == "__main__":
    main()
