"""Broker metrics on real logs, partitions and replica manager (no cluster): error counts by
Kafka name, ISR churn, partition gauges, and the per-partition log collector."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from kazoo.exceptions import BadVersionError
from prometheus_client import generate_latest

from pafka.cluster.topic_config import TopicConfig, parse_topic_config
from pafka.control.messages import LeaderAndIsr, PartitionInfo, StopReplica
from pafka.protocol.messages import ApiKey
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log_manager import LogManager
from pafka.zk.znodes import PartitionState
from services.broker.follower import FetcherSettings, FollowerManager
from services.broker.handlers.context import RequestContext
from services.broker.isr import IsrManager
from services.broker.metadata_cache import MetadataCache
from services.broker.metrics import REQUEST_SECONDS_BUCKETS, BrokerMetrics
from services.broker.partition import Partition
from services.broker.replica_manager import ReplicaManager

ME = 1
TOPIC_ID = uuid.uuid4()


def value(metrics: BrokerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def batch(n: int, size: int = 100) -> bytes:
    return build_batch([(None, b"v" * size, []) for _ in range(n)], timestamp_ms=1000)


def info(
    leader: int, epoch: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3)
) -> PartitionInfo:
    return PartitionInfo("t", TOPIC_ID, 0, leader, epoch, isr, replicas, epoch, 1)


class Harness:
    """A replica manager over real logs in a temporary directory, its metrics bound."""

    def __init__(self, data_dir: Path, min_isr: int = 2) -> None:
        self.metrics = BrokerMetrics()
        self.logs = LogManager(data_dir, LogConfig())
        self.config = parse_topic_config({"min.insync.replicas": str(min_isr)})
        self.replicas = ReplicaManager(
            ME,
            self.logs,
            MetadataCache(),
            self._config_for,
            FollowerManager(FetcherSettings(ME, 500, 1 << 20, 10 << 20, 1000)),
            on_isr_change=self.metrics.count_isr_change,
        )
        self.metrics.bind_partitions(lambda: self.replicas.partitions.values(), data_dir)

    async def _config_for(self, topic: str) -> TopicConfig:
        return self.config

    def apply(self, *infos: PartitionInfo) -> None:
        asyncio.run(self.replicas.leader_and_isr(LeaderAndIsr(9, 1, infos, ())))


# -- request and error counts ------------------------------------------------------------------


def test_errors_are_counted_by_kafka_api_and_error_name() -> None:
    m = BrokerMetrics()
    m.count_error(ApiKey.METADATA, 5)
    m.count_error(ApiKey.METADATA, 5)
    m.count_error(ApiKey.METADATA, 0)  # NONE is not an error
    m.produce_failed("orders", 6)
    m.fetch_failed("orders", 1)
    errors = "kafka_network_requestmetrics_errors_total"
    assert value(m, errors, request="Metadata", error="LEADER_NOT_AVAILABLE") == 2.0
    assert value(m, errors, request="Metadata", error="NONE") is None
    assert value(m, errors, request="Produce", error="NOT_LEADER_OR_FOLLOWER") == 1.0
    assert value(m, errors, request="Fetch", error="OFFSET_OUT_OF_RANGE") == 1.0
    failed = "kafka_server_brokertopicmetrics_failedproducerequests_total"
    assert value(m, failed, topic="orders") == 1.0
    failed = "kafka_server_brokertopicmetrics_failedfetchrequests_total"
    assert value(m, failed, topic="orders") == 1.0


def test_a_handlers_error_code_is_counted_and_returned_unchanged() -> None:
    m = BrokerMetrics()
    broker: Any = type("FakeBroker", (), {"metrics": m})()
    ctx = RequestContext(ApiKey.JOIN_GROUP, 5, 7, "client", "127.0.0.1", broker)
    assert ctx.error(25) == 25
    assert ctx.error(0) == 0
    errors = "kafka_network_requestmetrics_errors_total"
    assert value(m, errors, request="JoinGroup", error="UNKNOWN_MEMBER_ID") == 1.0


def test_requests_and_latency_are_labelled_with_kafka_api_names() -> None:
    m = BrokerMetrics()
    for _ in range(3):
        counted, timed = m.request_children(ApiKey.PRODUCE, 9)
        counted.inc()
        timed.observe(0.0007)
    assert m.request_children(ApiKey.PRODUCE, 9) is m.request_children(ApiKey.PRODUCE, 9)
    assert value(m, "kafka_network_requestmetrics_requests_total", request="Produce", version="9")
    latency = "pafka_broker_request_duration_seconds_bucket"
    # Sub-millisecond requests land in their own bucket, not lumped under 5 ms.
    assert value(m, latency, request="Produce", le="0.0005") == 0.0
    assert value(m, latency, request="Produce", le="0.001") == 3.0


def test_latency_buckets_span_sub_millisecond_to_long_poll_seconds() -> None:
    assert REQUEST_SECONDS_BUCKETS[0] <= 0.001
    assert REQUEST_SECONDS_BUCKETS[-1] >= 30.0
    assert list(REQUEST_SECONDS_BUCKETS) == sorted(set(REQUEST_SECONDS_BUCKETS))


def test_build_info_is_exported_by_the_broker() -> None:
    text = generate_latest(BrokerMetrics().registry).decode()
    assert 'pafka_build_info{component="broker",python="' in text


# -- ISR churn and partition gauges --------------------------------------------------------------


def test_isr_changes_count_shrinks_and_expands_once_each() -> None:
    m = BrokerMetrics()
    m.count_isr_change((1, 2, 3), (1, 2))
    m.count_isr_change((1, 2), (1, 2))  # no change
    m.count_isr_change((1, 2), (1, 2, 3))
    m.count_isr_change((1, 2), (1, 3))  # one left, one joined
    assert value(m, "kafka_server_replicamanager_isrshrinks_total") == 2.0
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 2.0


def test_controller_isr_changes_of_a_led_partition_count_and_set_under_min_isr(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, min_isr=3)
    h.apply(info(ME, 0, (1, 2, 3)))
    m = h.metrics
    assert value(m, "kafka_server_replicamanager_underminisrpartitioncount") == 0.0
    h.apply(info(ME, 1, (1, 3)))  # the controller took dead broker 2 out
    assert value(m, "kafka_server_replicamanager_isrshrinks_total") == 1.0
    assert value(m, "kafka_server_replicamanager_underminisrpartitioncount") == 1.0
    assert value(m, "kafka_server_replicamanager_underreplicatedpartitions") == 1.0
    h.apply(info(ME, 2, (1, 3, 2)))
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 1.0
    assert value(m, "kafka_server_replicamanager_underminisrpartitioncount") == 0.0


def test_isr_changes_of_partitions_this_broker_does_not_keep_leading_are_not_counted(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path, min_isr=3)
    h.apply(info(2, 0, (2, 3)))  # a follower (its leader is unknown, so it fetches nothing)
    h.apply(info(2, 1, (2,)))
    h.apply(info(ME, 2, (1,)))  # becoming leader is a new term, not a shrink
    m = h.metrics
    assert value(m, "kafka_server_replicamanager_isrshrinks_total") == 0.0
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 0.0
    assert value(m, "kafka_server_replicamanager_underminisrpartitioncount") == 1.0
    assert value(m, "kafka_server_replicamanager_leadercount") == 1.0
    assert value(m, "kafka_server_replicamanager_partitioncount") == 1.0


# -- the leader's own ISR writes -----------------------------------------------------------------


class FakeKazoo:
    """The calls ``write_isr_batch`` makes, on one partition state node."""

    def __init__(self, isr: tuple[int, ...], *, lose_to: tuple[int, ...] | None = None) -> None:
        self.state = PartitionState(ME, 0, isr, 1)
        self.version = 0
        self.lose_to = lose_to
        self.notifications = 0

    def set(self, path: str, data: bytes, version: int) -> Any:
        if self.lose_to is not None:
            self.state = PartitionState(ME, 0, self.lose_to, 1)
            self.version += 1
            raise BadVersionError()
        self.state = PartitionState.decode("t", 0, data)
        self.version += 1
        return type("Stat", (), {"version": self.version})()

    def get(self, path: str) -> tuple[bytes, Any]:
        return self.state.encode(), type("Stat", (), {"version": self.version})()

    def create(self, path: str, data: bytes, sequence: bool = False) -> str:
        self.notifications += 1
        return path + "0000000001"

    def set_async(self, path: str, data: bytes, version: int) -> Any:
        return _Result(lambda: self.set(path, data, version))

    def get_async(self, path: str) -> Any:
        return _Result(lambda: self.get(path))


class _Result:
    """kazoo's async result: ``get()`` returns the value or raises the call's error."""

    def __init__(self, call: Any) -> None:
        try:
            self.value, self.error = call(), None
        except BadVersionError as exc:
            self.value, self.error = None, exc

    def get(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class FakeZk:
    def __init__(self, kazoo: FakeKazoo) -> None:
        self.kazoo = kazoo

    async def run(self, fn: Any, *args: Any) -> Any:
        return fn(*args)


def leading(tmp_path: Path, isr: tuple[int, ...]) -> Partition:
    config = TopicConfig(min_insync_replicas=2)
    log_ = LogManager(tmp_path, LogConfig()).get_or_create("t", 0, config.log_config())
    partition = Partition("t", 0, log_, config)
    partition.apply(PartitionInfo("t", TOPIC_ID, 0, ME, 0, isr, (1, 2, 3), 0, 1), ME)
    return partition


async def _until(check: Any, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def test_a_leader_shrinking_a_lagging_follower_counts_one_shrink(tmp_path: Path) -> None:
    async def run() -> BrokerMetrics:
        m = BrokerMetrics()
        kazoo = FakeKazoo((1, 2, 3))
        isr = IsrManager(FakeZk(kazoo), 50, m.count_isr_change)  # type: ignore[arg-type]
        partition = leading(tmp_path, (1, 2, 3))
        # Follower 3 caught up "in the far future", so it never lags here; 2 never fetches.
        partition.on_follower_fetch(3, 0, 2**62)
        loop = asyncio.create_task(isr.shrink_loop(lambda: [partition]))
        await _until(lambda: partition.isr != (1, 2, 3))
        loop.cancel()
        await isr.close()
        assert partition.isr == (1, 3)
        assert kazoo.notifications == 1
        return m

    m = asyncio.run(run())
    assert value(m, "kafka_server_replicamanager_isrshrinks_total") == 1.0
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 0.0


def test_a_caught_up_follower_readmitted_counts_one_expand(tmp_path: Path) -> None:
    async def run() -> BrokerMetrics:
        m = BrokerMetrics()
        isr = IsrManager(FakeZk(FakeKazoo((1, 2))), 10_000, m.count_isr_change)  # type: ignore[arg-type]
        partition = leading(tmp_path, (1, 2))
        partition.on_follower_fetch(3, partition.log.high_watermark, 0)
        isr.maybe_expand(partition)
        await _until(lambda: partition.isr == (1, 2, 3))
        await isr.close()
        return m

    m = asyncio.run(run())
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 1.0


def test_an_isr_write_lost_to_the_same_isr_counts_nothing(tmp_path: Path) -> None:
    async def run() -> tuple[BrokerMetrics, Partition]:
        m = BrokerMetrics()
        kazoo = FakeKazoo((1, 2), lose_to=(1, 2))
        isr = IsrManager(FakeZk(kazoo), 10_000, m.count_isr_change)  # type: ignore[arg-type]
        partition = leading(tmp_path, (1, 2))
        partition.on_follower_fetch(3, partition.log.high_watermark, 0)
        isr.maybe_expand(partition)
        await _until(lambda: partition.zk_version == 1)
        await isr.close()
        return m, partition

    m, partition = asyncio.run(run())
    assert partition.isr == (1, 2)
    assert value(m, "kafka_server_replicamanager_isrexpands_total") == 0.0


# -- per-partition log metrics and disk space ----------------------------------------------------


def test_log_series_follow_appends_and_vanish_with_the_partition(tmp_path: Path) -> None:
    h = Harness(tmp_path, min_isr=1)
    h.apply(info(ME, 0, (1,), replicas=(1,)))
    m = h.metrics
    labels = {"topic": "t", "partition": "0"}
    assert value(m, "kafka_log_log_size", **labels) == 0.0
    partition = h.replicas.partitions[("t", 0)]
    records = batch(5)
    partition.append_as_leader(records, 1)
    partition.append_as_leader(batch(2), 1)
    assert value(m, "kafka_log_log_size", **labels) == float(partition.log.size_bytes)
    assert value(m, "kafka_log_log_size", **labels) >= 2 * len(batch(1))  # type: ignore[operator]
    assert value(m, "kafka_log_log_logendoffset", **labels) == 7.0
    assert value(m, "kafka_log_log_logstartoffset", **labels) == 0.0
    assert value(m, "kafka_log_log_numlogsegments", **labels) == 1.0
    partition.log.roll()
    assert value(m, "kafka_log_log_numlogsegments", **labels) == 2.0
    h.replicas.stop_replica(StopReplica(9, 1, (("t", 0),), delete=True))
    for name in ("kafka_log_log_size", "kafka_log_log_logendoffset"):
        assert value(m, name, **labels) is None
    assert "kafka_log_log_size{" not in generate_latest(m.registry).decode()


def test_a_hosted_topic_reports_zero_failed_requests_before_any_fails(tmp_path: Path) -> None:
    h = Harness(tmp_path, min_isr=1)
    m = h.metrics
    assert "kafka_server_brokertopicmetrics_failedproducerequests_total{" not in (
        generate_latest(m.registry).decode()
    )
    h.apply(info(ME, 0, (1,), replicas=(1,)))
    # The series exist from the first scrape after the broker hosts the topic.
    generate_latest(m.registry)
    for name in (
        "failedproducerequests",
        "failedfetchrequests",
        "messagesin",
        "bytesin",
        "bytesout",
    ):
        assert value(m, f"kafka_server_brokertopicmetrics_{name}_total", topic="t") == 0.0
    m.produce_failed("t", 6)
    assert value(m, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic="t") == 1
    # Kept, as counters are, once the broker stops hosting the topic.
    h.replicas.stop_replica(StopReplica(9, 1, (("t", 0),), delete=True))
    assert value(m, "kafka_server_brokertopicmetrics_failedfetchrequests_total", topic="t") == 0


def test_disk_space_of_the_data_dir_is_read_at_scrape_time(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    usage = shutil.disk_usage(tmp_path)
    assert value(h.metrics, "pafka_broker_log_dir_total_bytes") == float(usage.total)
    free = value(h.metrics, "pafka_broker_log_dir_free_bytes")
    assert free is not None and 0 < free <= usage.total


def test_an_unreadable_data_dir_drops_only_the_disk_series(tmp_path: Path) -> None:
    m = BrokerMetrics()
    m.bind_partitions(lambda: [], tmp_path / "gone")
    text = generate_latest(m.registry).decode()
    assert "\npafka_broker_log_dir_free_bytes " not in text
    assert "# TYPE pafka_broker_log_dir_free_bytes gauge" in text
    assert "kafka_server_replicamanager_partitioncount 0.0" in text


@pytest.mark.parametrize("min_isr", [1, 2, 3])
def test_under_min_isr_compares_the_isr_with_the_topics_setting(
    tmp_path: Path, min_isr: int
) -> None:
    h = Harness(tmp_path, min_isr=min_isr)
    isr = (1, 2)
    h.apply(info(ME, 0, isr))
    expected = 1.0 if len(isr) < min_isr else 0.0
    assert value(h.metrics, "kafka_server_replicamanager_underminisrpartitioncount") == expected


def test_every_log_and_disk_name_is_known_before_the_broker_binds_anything() -> None:
    # The chart's dashboard test reads the names off a fresh BrokerMetrics.
    names = {family.name for family in BrokerMetrics().registry.collect()}
    assert {
        "kafka_log_log_size",
        "kafka_log_log_logstartoffset",
        "kafka_log_log_logendoffset",
        "kafka_log_log_numlogsegments",
        "pafka_broker_log_dir_free_bytes",
        "pafka_broker_log_dir_total_bytes",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_server_replicamanager_isrshrinks",
        "kafka_server_replicamanager_isrexpands",
        "kafka_network_requestmetrics_errors",
        "pafka_build_info",
    } <= names
