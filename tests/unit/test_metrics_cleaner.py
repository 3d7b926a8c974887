"""The log cleaner's metrics, scraped after real cleans of real logs (a thread runs the clean
instead of a worker process; the pass is the same): Kafka's gauges with Kafka's arithmetic,
pafka's counters, and the per-partition compaction delay kept to compacted partitions."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log import Log
from pafka.storage.log_cleaner import CleanerSettings, LogCleaner, run_in_thread
from pafka.storage.log_manager import LogManager
from services.broker.cleaner_metrics import CleanerCollector
from services.broker.metrics import BrokerMetrics

HOUR_MS = 60 * 60 * 1000
NOW_MS = 1_700_000_000_000
COMPACTED = LogConfig(cleanup_policy="compact")


class Clock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


class Harness:
    def __init__(self, data_dir: Path, *, enabled: bool = True) -> None:
        self.data_dir = data_dir
        self.logs = LogManager(data_dir, LogConfig())
        self.cleaner = LogCleaner(
            lambda: self.logs.logs, CleanerSettings(enabled=enabled), runner=run_in_thread
        )
        self.clock = Clock(NOW_MS)
        self.registry = CollectorRegistry()
        collector = CleanerCollector(self.clock)
        self.registry.register(collector)
        self.dead = False
        collector.bind(self.cleaner, lambda: self.logs.logs, data_dir, lambda: self.dead)

    def value(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)

    def clean(self) -> None:
        asyncio.run(self.cleaner.clean_once(self.clock.now_ms))


def updates(log: Log, keys: int, rounds: int, timestamp_ms: int = NOW_MS - HOUR_MS) -> None:
    """``rounds`` batches each updating every key, one segment per batch, all below the high
    watermark: everything but the last round is garbage to the cleaner."""
    for r in range(rounds):
        records = [(f"k{k}".encode(), f"v{r}-{k}".encode() * 10, []) for k in range(keys)]
        log.append(build_batch(records, timestamp_ms=timestamp_ms), leader_epoch=0, now_ms=NOW_MS)
        log.roll(NOW_MS)
    log.high_watermark = log.log_end_offset


def test_a_clean_is_reported_with_kafkas_gauges_and_pafkas_counters(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    updates(h.logs.get_or_create("c", 0, COMPACTED), keys=20, rounds=10)
    h.clock.now_ms = NOW_MS + 5_000
    assert h.value("kafka_log_logcleanermanager_time_since_last_run_ms") == 5_000
    assert h.value("pafka_broker_log_cleaner_cleans_total") == 0
    h.clean()
    stats = h.cleaner.stats
    assert stats.cleans == 1 and stats.bytes_written < stats.bytes_read
    assert h.value("pafka_broker_log_cleaner_cleans_total") == 1
    assert h.value("pafka_broker_log_cleaner_read_bytes_total") == stats.bytes_read
    assert h.value("pafka_broker_log_cleaner_written_bytes_total") == stats.bytes_written
    # Kafka truncates its percentages to whole numbers.
    recopy = h.value("kafka_log_logcleaner_cleaner_recopy_percent")
    assert recopy == int(100 * stats.bytes_written / stats.bytes_read)
    assert recopy is not None and 0 < recopy < 50
    assert h.value("kafka_log_logcleanermanager_max_dirty_percent") == 100
    utilization = h.value("kafka_log_logcleaner_max_buffer_utilization_percent")
    assert utilization == int(100 * stats.last_buffer_utilization)
    assert h.value("kafka_log_logcleaner_max_clean_time_secs") == int(stats.last_clean_elapsed_s)
    assert h.value("kafka_log_logcleanermanager_time_since_last_run_ms") == 0
    h.clock.now_ms += 1_234
    assert h.value("kafka_log_logcleanermanager_time_since_last_run_ms") == 1_234
    assert h.value("kafka_log_logcleaner_deadthreadcount") == 0
    h.dead = True
    assert h.value("kafka_log_logcleaner_deadthreadcount") == 1


def test_compaction_delay_is_reported_per_compacted_partition(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    lag_ms = HOUR_MS
    overdue = replace(COMPACTED, max_compaction_lag_ms=lag_ms, min_cleanable_dirty_ratio=0.99)
    written_ms = NOW_MS - 3 * HOUR_MS
    updates(h.logs.get_or_create("late", 0, overdue), keys=5, rounds=3, timestamp_ms=written_ms)
    # Dirty but below its ratio and with no max lag: not due, never overdue.
    calm = replace(COMPACTED, min_cleanable_dirty_ratio=0.99)
    updates(h.logs.get_or_create("calm", 0, calm), keys=5, rounds=3)
    updates(h.logs.get_or_create("plain", 0, LogConfig()), keys=5, rounds=3)
    # Overdue logs are cleaned first: the check sees the delay, then cleans "late".
    h.clean()
    delay_s = (NOW_MS - lag_ms - written_ms) / 1000
    assert h.value("pafka_broker_log_compaction_delay_seconds", topic="late", partition="0") == (
        delay_s
    )
    assert h.value("kafka_log_logcleaner_max_compaction_delay_secs") == int(delay_s)
    assert h.value("pafka_broker_log_compaction_delay_seconds", topic="calm", partition="0") == 0
    text = generate_latest(h.registry).decode()
    assert 'topic="plain"' not in text.split("pafka_broker_log_compaction_delay_seconds", 1)[1]
    # The next check finds "late" cleaned: nothing dirty is overdue any more.
    h.clean()
    assert h.value("pafka_broker_log_compaction_delay_seconds", topic="late", partition="0") == 0
    assert h.value("kafka_log_logcleaner_max_compaction_delay_secs") == 0
    # A partition deleted since the check is not reported.
    h.logs.delete("late", 0)
    assert h.value("pafka_broker_log_compaction_delay_seconds", topic="late", partition="0") is None


def test_a_log_that_cannot_be_cleaned_is_counted_with_its_bytes(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    log = h.logs.get_or_create("c", 0, COMPACTED)
    updates(log, keys=10, rounds=4)
    # A flipped byte inside the first batch's records: its CRC no longer matches.
    first = log.segments[0]
    fd = os.open(first.log_path, os.O_RDWR)
    try:
        os.pwrite(fd, b"\xff", first.size - 5)
    finally:
        os.close(fd)
    labels = {"logDirectory": str(tmp_path)}
    assert h.value("kafka_log_logcleanermanager_uncleanable_partitions_count", **labels) == 0
    h.clean()
    assert h.cleaner.stats.uncleanable == {("c", 0)}
    assert h.value("kafka_log_logcleanermanager_uncleanable_partitions_count", **labels) == 1
    assert h.value("kafka_log_logcleanermanager_uncleanable_bytes", **labels) == log.size_bytes
    assert h.value("pafka_broker_log_compaction_delay_seconds", topic="c", partition="0") is None


def test_a_broker_without_a_cleaner_reports_no_cleaner_samples(tmp_path: Path) -> None:
    h = Harness(tmp_path, enabled=False)
    updates(h.logs.get_or_create("c", 0, COMPACTED), keys=5, rounds=3)
    text = generate_latest(h.registry).decode()
    assert "# TYPE kafka_log_logcleanermanager_time_since_last_run_ms gauge" in text
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert not [s for s in samples if "logcleaner" in s or "log_cleaner" in s]


def test_every_cleaner_name_is_known_before_the_broker_binds_anything() -> None:
    # The chart's dashboard and alert tests read the names off a fresh BrokerMetrics.
    names = {family.name for family in BrokerMetrics().registry.collect()}
    assert {
        "kafka_log_logcleanermanager_max_dirty_percent",
        "kafka_log_logcleanermanager_time_since_last_run_ms",
        "kafka_log_logcleanermanager_uncleanable_partitions_count",
        "kafka_log_logcleaner_cleaner_recopy_percent",
        "kafka_log_logcleaner_max_clean_time_secs",
        "kafka_log_logcleaner_max_compaction_delay_secs",
        "kafka_log_logcleaner_max_buffer_utilization_percent",
        "kafka_log_logcleaner_deadthreadcount",
        "pafka_broker_log_compaction_delay_seconds",
        "pafka_broker_log_cleaner_read_bytes",
        "pafka_broker_log_cleaner_worker_peak_memory_bytes",
    } <= names
