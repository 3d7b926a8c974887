"""Batch job: a range of a topic's records to Parquet, partitioned by topic and day.

Reads ``[--starting-offsets, --ending-offsets)`` (earliest / latest / JSON as in Spark's Kafka
source) of ``--topic`` through the gateway and writes one row per record: topic, partition,
offset, timestamp, key and value as UTF-8 strings, headers as (key, value) string pairs, and
the record's UTC ``date``. ``--output`` is replaced (a rerun of the same range gives the same
files).

Run locally (the ``spark`` extra installed; a gateway on 127.0.0.1:8082)::

    .venv/bin/python spark-jobs/topic_to_parquet.py --gateway http://127.0.0.1:8082 \\
        --topic events --output /tmp/events-parquet

A gateway started with bearer tokens needs ``PAFKA_SPARK_TOKEN`` set to one (on Kubernetes, the
chart's ``spark.tokenSecret`` puts a Secret's token there in the driver pod).

On Kubernetes it runs in the Spark job image (``docker build --target spark -t pafka-spark .``,
which holds this file at /opt/pafka/spark-jobs/) with the chart's driver account
(``--set spark.enabled=true``); the output must be shared storage. With the Kubeflow
spark-operator installed, the chart submits it as a SparkApplication::

    helm upgrade --install pafka charts/pafka -n pafka --set spark.enabled=true \\
        --set spark.topicToParquet.enabled=true \\
        --set spark.topicToParquet.output=s3a://bucket/events-parquet \\
        --set spark.topicToParquet.minPartitions=8

The same submission with spark-submit (from the image: ``docker run pafka-spark spark-submit
...``, or any Spark 4 distribution)::

    spark-submit --master k8s://https://$KUBERNETES_API:6443 --deploy-mode cluster \\
        --name pafka-topic-to-parquet \\
        --conf spark.kubernetes.namespace=pafka \\
        --conf spark.kubernetes.container.image=pafka-spark:0.1.0 \\
        --conf spark.kubernetes.authenticate.driver.serviceAccountName=pafka-spark \\
        --conf spark.executor.instances=2 \\
        local:///opt/pafka/spark-jobs/topic_to_parquet.py \\
        --gateway http://pafka-gateway.pafka.svc.cluster.local:8082 \\
        --topic events --output s3a://bucket/events-parquet --min-partitions 8
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pafka.spark import register
from pafka.spark.options import token_from_env


def records_table(records: DataFrame) -> DataFrame:
    """Rows of Spark's Kafka schema (with headers) in; the Parquet table's rows out."""
    headers = F.transform(
        "headers",
        lambda h: F.struct(h["key"].alias("key"), h["value"].cast("string").alias("value")),
    )
    return records.select(
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.col("key").cast("string").alias("key"),
        F.col("value").cast("string").alias("value"),
        headers.alias("headers"),
        F.to_date(F.to_utc_timestamp("timestamp", F.current_timezone())).alias("date"),
    )


def extract(spark: SparkSession, args: argparse.Namespace) -> DataFrame:
    reader = (
        spark.read.format("pafka")
        .option("gateway", args.gateway)
        .options(**token_from_env(os.environ))
        .option("subscribe", args.topic)
        .option("startingOffsets", args.starting_offsets)
        .option("endingOffsets", args.ending_offsets)
        .option("includeHeaders", "true")
    )
    if args.min_partitions:
        reader = reader.option("minPartitions", str(args.min_partitions))
    return reader.load()


def load(table: DataFrame, args: argparse.Namespace) -> None:
    table.write.mode("overwrite").partitionBy("topic", "date").parquet(args.output)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gateway", required=True, help="pafka gateway URL(s), comma-separated")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--output", required=True, help="directory (or URI) for the Parquet")
    parser.add_argument("--starting-offsets", default="earliest")
    parser.add_argument("--ending-offsets", default="latest")
    parser.add_argument("--min-partitions", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = spark or SparkSession.builder.appName("pafka-topic-to-parquet").getOrCreate()
    register(spark)
    load(records_table(extract(spark, args)), args)


if __name__ == "__main__":
    main()
