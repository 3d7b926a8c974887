"""The ``token`` option against a gateway that requires bearer tokens.

A ``pafka gateway`` process of its own over the shared cluster, started with a tokens file: one
token for the test's topics, one for other topics only. With the right token Spark writes and
reads (batch and streaming); without one, with an unknown one, or with one for other topics,
the action fails at once with the connector's one-line reason (401/403, check the token
option), not after the request timeout and not with an HTTP library's traceback.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame, Row, SparkSession

from pafka.spark.options import TOKEN_ENV
from tests.integration.conftest import ClusterHandle
from tests.integration.gateway_process import gateway_process
from tests.integration.test_spark_jobs import job as load_job
from tests.integration.test_spark_source import read_all, spark, values

__all__ = ["spark"]  # the session fixture, shared with the source's tests

GOOD, OTHER = "spark-good-token", "spark-other-token"
# Far longer than a refused request takes, far shorter than the default request timeout, in
# which an unreachable gateway would still be retried.
REFUSED_WITHIN_S = 20.0


@pytest.fixture(scope="module")
def guarded(cluster: ClusterHandle, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a gateway that requires a token."""
    home = tmp_path_factory.mktemp("token-gateway")
    tokens = home / "tokens"
    tokens.write_text(f"{GOOD} spark-auth-*\n{OTHER} elsewhere-*\n")
    with gateway_process(
        cluster.zk_connect, home, {"PAFKA_GATEWAY_TOKENS_FILE": str(tokens)}
    ) as url:
        yield url


def read(spark: SparkSession, gateway: str, topic: str, token: str | None) -> DataFrame:
    reader = spark.read.format("pafka").option("gateway", gateway).option("subscribe", topic)
    return (reader.option("token", token) if token else reader).load()


def write(spark: SparkSession, gateway: str, topic: str, token: str | None, n: int) -> None:
    df = spark.createDataFrame([Row(value=f"t{i}") for i in range(n)], "value string")
    writer = df.write.format("pafka").mode("append").option("gateway", gateway)
    writer = writer.option("topic", topic)
    (writer.option("token", token) if token else writer).save()


def test_a_good_token_reads_and_writes(
    spark: SparkSession, cluster: ClusterHandle, guarded: str, tmp_path: Path
) -> None:
    cluster.create_topic("spark-auth-in", partitions=2, replication_factor=3)
    cluster.create_topic("spark-auth-out", partitions=1, replication_factor=3)
    write(spark, guarded, "spark-auth-in", GOOD, 12)
    open_gateway = cluster.gateways[0]  # the cluster's own gateways require no token
    assert sorted(values(read_all(open_gateway, "spark-auth-in"))) == sorted(
        f"t{i}".encode() for i in range(12)
    )
    rows = read(spark, guarded, "spark-auth-in", GOOD).collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(f"t{i}".encode() for i in range(12))

    stream = (
        spark.readStream.format("pafka")
        .option("gateway", guarded)
        .option("token", GOOD)
        .option("subscribe", "spark-auth-in")
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.select("value")
        .writeStream.format("pafka")
        .option("gateway", guarded)
        .option("token", GOOD)
        .option("topic", "spark-auth-out")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(values(read_all(open_gateway, "spark-auth-out"))) == sorted(
        f"t{i}".encode() for i in range(12)
    )


@pytest.mark.parametrize(
    ("token", "status"), [(None, 401), ("not-a-token", 401), (OTHER, 403)], ids=str
)
def test_a_missing_or_wrong_token_fails_at_once_and_clearly(
    spark: SparkSession, cluster: ClusterHandle, guarded: str, token: str | None, status: int
) -> None:
    topic = f"spark-auth-refused-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    for action in (
        lambda: read(spark, guarded, topic, token).collect(),
        lambda: write(spark, guarded, topic, token, 3),
    ):
        began = time.monotonic()
        with pytest.raises(Exception) as refused:
            action()
        assert time.monotonic() - began < REFUSED_WITHIN_S
        message = str(refused.value)
        assert f": {status} " in message and "(check the token option)" in message, message
        assert f"gateway {guarded} refused" in message, message
        assert "httpx" not in message, message
    assert read_all(cluster.gateways[0], topic) == []


def test_jobs_take_the_token_from_the_environment(
    spark: SparkSession,
    cluster: ClusterHandle,
    guarded: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster.create_topic("spark-auth-job", partitions=1, replication_factor=3)
    write(spark, guarded, "spark-auth-job", GOOD, 5)
    job = load_job("topic_to_parquet")
    args = ["--gateway", guarded, "--topic", "spark-auth-job", "--output", str(tmp_path / "out")]
    with pytest.raises(Exception, match="check the token option"):
        job.main(args, spark)
    monkeypatch.setenv(TOKEN_ENV, GOOD)
    job.main(args, spark)
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r.value for r in rows) == [f"t{i}" for i in range(5)]
