"""Batch read throughput of the Spark connector through the gateway, beside a Kafka consumer.

    python -m bench.spark_read                          # starts and stops a local cluster
    python -m bench.spark_read --records 500000 --partitions 6 --cores 4

One run: a fresh topic (replication factor 1) gets ``--records`` records of 100 bytes from
librdkafka; then the same records are read back

* by one thread through the gateway's range endpoint: in JSON pages with httpx (binary
  format, base64 values), and in the record-batch format (``application/vnd.pafka.batches``)
  as a Spark task reads it, through the connector's client and decoded into Arrow, without
  Spark;
* by Spark (``local[--cores]``), ``minPartitions`` = ``--cores`` x ``--tasks-per-core`` (2 by
  default: Spark's tuning guide advises 2 to 3 tasks per core, and 3 partitions on 2 cores
  would leave one core idle while the third task runs), every value materialized
  (``sum(length(value))``): first as the connector read before the batch format (JSON pages of
  ``maxRecordsPerRequest`` records, a data source defined here), then with ``format("pafka")``
  (the batch format). The first Spark read starts the Python workers and is reported apart
  from the best of the next ``--rounds`` of each;
* by one librdkafka consumer over the Kafka protocol (assign, no group), the baseline: each of
  the ``--rounds`` batch-format Spark reads comes right after one consumer read, so that both
  sides of each pair meet the machine as it is at that moment.

Each line gives records/s and MB/s of values; then the best time of a Spark read of one record
per partition (what a query costs whatever it reads: Spark's planning, scheduling and Python
workers, the connector's planning requests), both Spark reads as a ratio of the consumer's best
rate, the batch-format ratio of each pair and their median, and the batch-format read's rate
with that per-query cost taken out.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.produce_fetch import Phase, create_topic, fetch, produce

BINARY = "application/vnd.kafka.binary.v2+json"
BATCHES = "application/vnd.pafka.batches"


def _read_all(
    gateway: str,
    topic: str,
    partitions: int,
    accept: str,
    read: Callable[[httpx.Response, int, int], tuple[int, int, int]],
    max_records: int,
) -> tuple[int, float]:
    """(records, seconds) of reading every partition from 0 with ``accept``; ``read`` takes an
    answer, its partition and offset and gives (records, next offset, high watermark)."""
    seen = 0
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for partition in range(partitions):
            offset = 0
            while True:
                response = client.get(
                    f"{gateway}/topics/{topic}/partitions/{partition}/records",
                    params={"offset": offset, "max_records": max_records},
                    headers={"Accept": accept},
                )
                count, offset, high_watermark = read(response, partition, offset)
                seen += count
                if offset >= high_watermark:
                    break
    return seen, time.perf_counter() - started


def gateway_read(gateway: str, topic: str, partitions: int, records: int) -> Phase:
    def read(response: httpx.Response, partition: int, offset: int) -> tuple[int, int, int]:
        page = response.json()
        for record in page["records"]:
            base64.b64decode(record["value"])
        return len(page["records"]), page["next_offset"], page["high_watermark"]

    seen, elapsed = _read_all(gateway, topic, partitions, BINARY, read, 1000)
    assert seen == records, f"the gateway gave {seen} of {records} records"
    return Phase("gateway", seen, elapsed)


def gateway_batch_read(gateway: str, topic: str, partitions: int, records: int) -> Phase:
    """Every partition read as one Spark task reads its range: the connector's
    :func:`~pafka.spark.reading.read_arrow` over its gateway client, without Spark."""
    from pafka.spark.gateway import GatewayClient
    from pafka.spark.options import GatewayOptions
    from pafka.spark.planning import OffsetRange
    from pafka.spark.reading import read_arrow

    seen = 0
    started = time.perf_counter()
    with GatewayClient(GatewayOptions((gateway,))) as client:
        bounds = client.bounds([(topic, p) for p in range(partitions)])
        for (name, partition), (beginning, end) in bounds.items():
            ranged = OffsetRange(name, partition, beginning, end)
            for rows in read_arrow(client, ranged, include_headers=False, fail_on_data_loss=True):
                seen += rows.num_rows
    elapsed = time.perf_counter() - started
    assert seen == records, f"the gateway gave {seen} of {records} records"
    return Phase("batches", seen, elapsed)


def json_source() -> type:
    """The connector as it read before the batch format: JSON pages through ``read_pages``.
    Defined in a function so that Spark's workers get it by value (pickled from ``__main__``)."""
    from pafka.spark.gateway import GatewayClient
    from pafka.spark.options import parse_read
    from pafka.spark.reading import read_pages
    from pafka.spark.rows import to_arrow
    from pafka.spark.source import BatchReader, PafkaDataSource, RangePartition

    class JsonReader(BatchReader):
        def read(self, partition: Any) -> Any:
            assert isinstance(partition, RangePartition)
            opts = self.options
            with GatewayClient(opts.gateway, first=partition.range.partition) as client:
                pages = read_pages(client, partition.range, fail_on_data_loss=True)
                for page in pages:
                    yield to_arrow(page, opts.include_headers)

    class JsonSource(PafkaDataSource):
        @classmethod
        def name(cls) -> str:
            return "pafka-json"

        def reader(self, schema: Any) -> Any:
            return JsonReader(parse_read(self.options, streaming=False))

    return JsonSource


@contextlib.contextmanager
def spark_reader(
    gateway: str, topic: str, records: int, cores: int, min_partitions: int
) -> Iterator[Callable[..., Phase]]:
    """A Spark session (``local[cores]``) and a function reading ``topic`` with it once: in a
    given format, up to given ending offsets, asserting the count it expects."""
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
    spark.dataSource.register(json_source())

    def once(fmt: str, ending: str = "latest", expected: int = records) -> Phase:
        started = time.perf_counter()
        df = (
            spark.read.format(fmt)
            .option("gateway", gateway)
            .option("subscribe", topic)
            .option("minPartitions", str(min_partitions))
            .option("endingOffsets", ending)
            .load()
        )
        row = df.selectExpr("count(*) AS n", "sum(length(value)) AS bytes").collect()[0]
        elapsed = time.perf_counter() - started
        assert row.n == expected, f"Spark read {row.n} of {expected} records"
        return Phase("spark", row.n, elapsed)

    try:
        yield once
    finally:
        spark.stop()


def _seconds(phase: Phase) -> float:
    return phase.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--tasks-per-core", type=int, default=2, help="minPartitions = cores x this"
    )
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
        single = gateway_read(gateway, topic, parts, args.records)
        print(single.line(parts), "(one thread, REST range reads, JSON)", flush=True)
        batches = gateway_batch_read(gateway, topic, parts, args.records)
        print(batches.line(parts), "(one thread, REST range reads, batches to Arrow)", flush=True)
        min_partitions = args.cores * args.tasks_per_core
        cores = f"local[{args.cores}], minPartitions {min_partitions}"
        one_each = json.dumps({topic: {str(p): 1 for p in range(parts)}})
        with spark_reader(gateway, topic, args.records, args.cores, min_partitions) as once:
            json_first = once("pafka-json")
            print(json_first.line(parts), f"(JSON pages, first read, {cores}, workers starting)")
            json_best = min((once("pafka-json") for _ in range(args.rounds)), key=_seconds)
            print(json_best.line(parts), f"(JSON pages, as before, best of {args.rounds})")
            first = once("pafka")
            print(first.line(parts), f"(record batches, first read, {cores})", flush=True)
            # Each Spark read right after a consumer read: a machine whose speed drifts during
            # the run (other tenants, a throttled CPU) then slows both sides of a pair alike.
            pairs = [
                (fetch(bootstrap, topic, parts, args.records), once("pafka"))
                for _ in range(args.rounds)
            ]
            tiny = min((once("pafka", one_each, parts) for _ in range(args.rounds)), key=_seconds)
        consumer = min((c for c, _ in pairs), key=_seconds)
        best = min((s for _, s in pairs), key=_seconds)
        print(
            consumer.line(parts),
            f"(librdkafka consumer, Kafka protocol, best of {args.rounds}, "
            "each read just before a Spark batch read)",
        )
        print(best.line(parts), f"(record batches, best of {args.rounds}, {cores})")
        print(f"spark    a read of one record per partition: {tiny.seconds:.3f} s (per query)")
        rate = consumer.records_per_s
        ratios = [s.records_per_s / c.records_per_s for c, s in pairs]
        print(
            f"spark / consumer: JSON pages (before) = {json_best.records_per_s / rate:.2f}, "
            f"record batches (now) = {best.records_per_s / rate:.2f} (best / best); "
            f"one thread, batches / JSON = {batches.records_per_s / single.records_per_s:.2f}"
        )
        print(
            "record batches / consumer, read by read: "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + f"; median {statistics.median(ratios):.2f}"
        )
        beyond = max(best.seconds - tiny.seconds, 1e-9)
        print(
            f"record batches without the per-query cost: {args.records / beyond:,.0f} records/s "
            f"= {args.records / beyond / rate:.2f} of the consumer"
        )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
