"""The log cleaner's metrics, read from its stats when Prometheus scrapes.

Kafka's gauges under the names Strimzi's JMX-exporter rules give them: ``kafka.log:
type=LogCleaner`` (``max-buffer-utilization-percent``, ``cleaner-recopy-percent``,
``max-clean-time-secs``, ``max-compaction-delay-secs``, ``DeadThreadCount``) and
``type=LogCleanerManager`` (``max-dirty-percent``, ``time-since-last-run-ms``, and per log
directory ``uncleanable-partitions-count``, ``uncleanable-bytes``), with Kafka's integer
arithmetic, so a dashboard or alert written for Kafka reads the same numbers. pafka has one
cleaner, so Kafka's maxima over cleaner threads are that cleaner's last values.

pafka's own series add what Kafka only logs: bytes read and written and cleans done (counters,
so a rate is the cleaning throughput), the worker process's peak memory, and each cleanable
compacted partition's delay past ``max.compaction.lag.ms``: Kafka's gauge is a broker-wide
maximum, and an alert should name the partition. Only compacted partitions get that series.

A broker running without a cleaner (``log.cleaner.enable=false``) reports none of these, as
Kafka registers none; otherwise the time since the last run would grow for ever.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pafka.storage.log import Log
from pafka.storage.log_cleaner import CleanerStats, LogCleaner

TopicPartition = tuple[str, int]

# Strimzi's rule for an MBean with one key besides name keeps the key as the label's name.
LOG_DIRECTORY_LABEL = "logDirectory"


def _families() -> dict[str, GaugeMetricFamily | CounterMetricFamily]:
    gauges = {
        "kafka_log_logcleanermanager_max_dirty_percent": (
            "Dirty share (percent) of the dirtiest compacted log at the cleaner's last check",
            [],
        ),
        "kafka_log_logcleanermanager_time_since_last_run_ms": (
            "Milliseconds since the cleaner last checked the logs",
            [],
        ),
        "kafka_log_logcleanermanager_uncleanable_partitions_count": (
            "Partitions whose clean failed on their data; skipped until the broker restarts",
            [LOG_DIRECTORY_LABEL],
        ),
        "kafka_log_logcleanermanager_uncleanable_bytes": (
            "Bytes of the logs of uncleanable partitions",
            [LOG_DIRECTORY_LABEL],
        ),
        "kafka_log_logcleaner_max_buffer_utilization_percent": (
            "How full (percent) the offset map was in the last clean",
            [],
        ),
        "kafka_log_logcleaner_cleaner_recopy_percent": (
            "Bytes written as a percentage of bytes read in the last clean",
            [],
        ),
        "kafka_log_logcleaner_max_clean_time_secs": (
            "Seconds the last clean took (whole seconds)",
            [],
        ),
        "kafka_log_logcleaner_max_compaction_delay_secs": (
            "Longest delay past max.compaction.lag.ms of a log's oldest dirty record (KIP-354)",
            [],
        ),
        "kafka_log_logcleaner_deadthreadcount": (
            "1 when the cleaner stopped on an unexpected error, else 0",
            [],
        ),
        "pafka_broker_log_cleaner_worker_peak_memory_bytes": (
            "Largest peak resident memory of any clean's worker process since the broker started",
            [],
        ),
        "pafka_broker_log_compaction_delay_seconds": (
            "How long a compacted partition's oldest dirty record is past max.compaction.lag.ms"
            " (0 when not overdue), at the cleaner's last check",
            ["topic", "partition"],
        ),
    }
    counters = {
        "pafka_broker_log_cleaner_read_bytes": "Bytes of log the cleaner read",
        "pafka_broker_log_cleaner_written_bytes": "Bytes of cleaned log the cleaner wrote",
        "pafka_broker_log_cleaner_cleans": "Cleans completed",
    }
    families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
        name: GaugeMetricFamily(name, doc, labels=labels) for name, (doc, labels) in gauges.items()
    }
    families.update((name, CounterMetricFamily(name, doc)) for name, doc in counters.items())
    return families


def _percent(ratio: float) -> int:
    # Kafka's gauges are (100 * ratio).toInt: truncated, not rounded.
    return int(100 * ratio)


class CleanerCollector(Collector):
    """Registered with the broker's metrics from the start (every name known before the broker
    runs); :meth:`bind` gives it the cleaner, the logs and whether the cleaner's task died."""

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._cleaner: LogCleaner | None = None
        self._logs: Callable[[], Mapping[TopicPartition, Log]] = dict
        self._data_dir = ""
        self._dead: Callable[[], bool] = lambda: False
        # Kafka counts the time since the last run from the cleaner's creation until it runs.
        self._bound_ms = 0

    def bind(
        self,
        cleaner: LogCleaner,
        logs: Callable[[], Mapping[TopicPartition, Log]],
        data_dir: Path,
        dead: Callable[[], bool],
    ) -> None:
        self._cleaner = cleaner
        self._logs = logs
        self._data_dir = str(data_dir)
        self._dead = dead
        self._bound_ms = self._clock_ms()

    def describe(self) -> Iterator[Metric]:
        yield from _families().values()

    def collect(self) -> Iterator[Metric]:
        families = _families()
        cleaner = self._cleaner
        if cleaner is not None and cleaner.settings.enabled:
            self._add_samples(families, cleaner.stats)
        yield from families.values()

    def _add_samples(
        self, f: Mapping[str, GaugeMetricFamily | CounterMetricFamily], stats: CleanerStats
    ) -> None:
        last_run_ms = stats.last_run_ms or self._bound_ms
        f["kafka_log_logcleanermanager_max_dirty_percent"].add_metric(
            [], _percent(stats.max_dirty_ratio)
        )
        f["kafka_log_logcleanermanager_time_since_last_run_ms"].add_metric(
            [], max(self._clock_ms() - last_run_ms, 0)
        )
        uncleanable = set(stats.uncleanable)
        logs = self._logs()
        f["kafka_log_logcleanermanager_uncleanable_partitions_count"].add_metric(
            [self._data_dir], len(uncleanable)
        )
        f["kafka_log_logcleanermanager_uncleanable_bytes"].add_metric(
            [self._data_dir], sum(logs[k].size_bytes for k in uncleanable if k in logs)
        )
        f["kafka_log_logcleaner_max_buffer_utilization_percent"].add_metric(
            [], _percent(stats.last_buffer_utilization)
        )
        f["kafka_log_logcleaner_cleaner_recopy_percent"].add_metric(
            [], _percent(stats.last_recopy_ratio)
        )
        f["kafka_log_logcleaner_max_clean_time_secs"].add_metric(
            [], int(stats.last_clean_elapsed_s)
        )
        f["kafka_log_logcleaner_max_compaction_delay_secs"].add_metric(
            [], stats.max_compaction_delay_ms // 1000
        )
        f["kafka_log_logcleaner_deadthreadcount"].add_metric([], 1 if self._dead() else 0)
        f["pafka_broker_log_cleaner_worker_peak_memory_bytes"].add_metric(
            [], stats.peak_memory_bytes
        )
        delay = f["pafka_broker_log_compaction_delay_seconds"]
        # A partition deleted or moved away since the last check is not reported, nor one
        # found uncleanable since (the checks skip it; the uncleanable count reports it).
        for (topic, partition), delay_ms in sorted(stats.compaction_delay_ms.items()):
            if (topic, partition) in logs and (topic, partition) not in uncleanable:
                delay.add_metric([topic, str(partition)], delay_ms / 1000)
        f["pafka_broker_log_cleaner_read_bytes"].add_metric([], stats.bytes_read)
        f["pafka_broker_log_cleaner_written_bytes"].add_metric([], stats.bytes_written)
        f["pafka_broker_log_cleaner_cleans"].add_metric([], stats.cleans)
