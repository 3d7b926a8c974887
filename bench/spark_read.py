"""Batch read throughput of the Spark connector through the gateway, beside a Kafka consumer.

    python -m bench.spark_read                          # starts and stops a local cluster
    python -m bench.spark_read --records 500000 --partitions 6 --cores 4

One run: a fresh topic (replication factor 1) gets ``--records`` records of 100 bytes from
librdkafka; then the same records are read back

* by one librdkafka consumer over the Kafka protocol (assign, no group): the baseline;
* by one thread through the gateway's range endpoint with httpx (what one Spark task does,
  without Spark);
* by Spark (``local[--cores]``) with ``format("pafka")``, one task per partition, every value
  materialized (``sum(length(value))``); the first Spark read starts the Python workers and is
  reported apart from the best of the next ``--rounds``.

Each line gives records/s and MB/s of values. The Spark connector pays for JSON and base64 in
the gateway and again in Python, so it is expected to read several times slower than the
consumer; the interesting ratio is Spark vs the single-thread gateway read (Spark's overhead and
its parallelism).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from bench.produce_fetch import Phase, create_topic, fetch, produce

BINARY = "application/vnd.kafka.binary.v2+json"


def gateway_read(gateway: str, topic: str, partitions: int, records: int) -> Phase:
    seen = 0
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for partition in range(partitions):
            offset = 0
            while True:
                page = client.get(
                    f"{gateway}/topics/{topic}/partitions/{partition}/records",
                    params={"offset": offset, "max_records": 1000},
                    headers={"Accept": BINARY},
                ).json()
                for record in page["records"]:
                    base64.b64decode(record["value"])
                seen += len(page["records"])
                if page["next_offset"] >= page["high_watermark"]:
                    break
                offset = page["next_offset"]
    elapsed = time.perf_counter() - started
    assert seen == records, f"the gateway gave {seen} of {records} records"
    return Phase("gateway", seen, elapsed)


def spark_reads(
    gateway: str, topic: str, records: int, cores: int, rounds: int
) -> tuple[Phase, Phase]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pafka.spark import register

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)

    def once() -> Phase:
        started = time.perf_counter()
        df = (
            spark.read.format("pafka")
            .option("gateway", gateway)
            .option("subscribe", topic)
            .option("minPartitions", str(cores))
            .load()
        )
        row = df.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0]
        elapsed = time.perf_counter() - started
        assert row.n == records, f"Spark read {row.n} of {records} records"
        return Phase("spark", row.n, elapsed)

    try:
        first = once()
        best = min((once() for _ in range(rounds)), key=lambda p: p.seconds)
    finally:
        spark.stop()
    return first, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    from pafka.local.cluster import LocalCluster

    cluster = LocalCluster(
        Path(tempfile.mkdtemp(prefix="pafka-bench-spark-")), brokers=1, controllers=1, gateways=1
    )
    cluster.start()
    try:
        bootstrap, gateway = cluster.bootstrap, cluster.gateways()[0].http_url
        topic = f"bench-spark-{uuid.uuid4().hex[:6]}"
        create_topic(bootstrap, topic, args.partitions)
        parts = args.partitions
        print(produce(bootstrap, topic, args.records).line(parts), flush=True)
        consumer = fetch(bootstrap, topic, parts, args.records)
        print(consumer.line(parts), "(librdkafka consumer, Kafka protocol)", flush=True)
        single = gateway_read(gateway, topic, parts, args.records)
        print(single.line(parts), "(one thread, REST range reads)", flush=True)
        first, best = spark_reads(gateway, topic, args.records, args.cores, args.rounds)
        print(first.line(parts), f"(first read, local[{args.cores}], workers starting)")
        print(best.line(parts), f"(best of {args.rounds}, local[{args.cores}])")
        print(
            f"spark / consumer = {best.records_per_s / consumer.records_per_s:.2f}; "
            f"spark / one gateway thread = {best.records_per_s / single.records_per_s:.2f}"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
