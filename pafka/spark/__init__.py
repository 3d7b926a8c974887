"""Spark connector: the ``pafka`` data source (batch and Structured Streaming, read and write).

Reads and writes go through the REST gateway (design §6), so Spark needs no Kafka client and
no broker addresses, only ``gateway`` URLs. ``register(spark)`` makes ``format("pafka")``
available in a session; pyspark is the optional extra ``pafka[spark]``.

Modules without pyspark (unit-tested alone): :mod:`~pafka.spark.options`,
:mod:`~pafka.spark.planning`, :mod:`~pafka.spark.gateway`, :mod:`~pafka.spark.reading`,
:mod:`~pafka.spark.writing`, :mod:`~pafka.spark.rows`, :mod:`~pafka.spark.errors`. With pyspark:
:mod:`~pafka.spark.source` (the data source and readers) and :mod:`~pafka.spark.sink` (writers).
"""

from __future__ import annotations

from typing import Any

FORMAT = "pafka"


def register(spark: Any) -> None:
    """Register the ``pafka`` format in ``spark`` (a SparkSession)."""
    from pafka.spark.source import PafkaDataSource

    spark.dataSource.register(PafkaDataSource)
