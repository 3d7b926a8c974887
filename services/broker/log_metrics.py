"""Per-partition log metrics and the data dir's disk space, read when Prometheus scrapes.

Kafka's ``kafka.log:type=Log`` MBeans under Strimzi's names (``kafka_log_log_size{topic,
partition}`` and friends), for every replica this broker hosts, leader or follower. Nothing is
counted on the append path: the values are what the logs hold at scrape time, and a partition
deleted or moved away simply stops being reported.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from services.broker.partition import Partition

log = logging.getLogger(__name__)

PARTITION_LABELS = ["topic", "partition"]


class LogCollector(Collector):
    """Registered with the broker's metrics from the start (so every name is known before
    the broker runs); :meth:`bind` gives it the partitions and data dir to read."""

    def __init__(self) -> None:
        self.partitions: Callable[[], Iterable[Partition]] = tuple
        self.data_dir: Path | None = None

    def bind(self, partitions: Callable[[], Iterable[Partition]], data_dir: Path) -> None:
        self.partitions = partitions
        self.data_dir = data_dir

    def _families(self) -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "kafka_log_log_size",
                "Bytes of the partition's log segments",
                labels=PARTITION_LABELS,
            ),
            GaugeMetricFamily(
                "kafka_log_log_logstartoffset",
                "First offset the partition's log holds",
                labels=PARTITION_LABELS,
            ),
            GaugeMetricFamily(
                "kafka_log_log_logendoffset",
                "Offset the partition's next record will get",
                labels=PARTITION_LABELS,
            ),
            GaugeMetricFamily(
                "kafka_log_log_numlogsegments",
                "Segments of the partition's log",
                labels=PARTITION_LABELS,
            ),
        )

    def _disk_families(self) -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "pafka_broker_log_dir_free_bytes",
                "Bytes free to unprivileged users on the data dir's file system",
            ),
            GaugeMetricFamily(
                "pafka_broker_log_dir_total_bytes", "Size of the data dir's file system in bytes"
            ),
        )

    def describe(self) -> Iterator[Metric]:
        # Names only, so that registering does not read the logs.
        yield from self._families()
        yield from self._disk_families()

    def collect(self) -> Iterator[Metric]:
        size, start, end, segments = self._families()
        for partition in self.partitions():
            labels = [partition.topic, str(partition.index)]
            log_ = partition.log
            size.add_metric(labels, log_.size_bytes)
            start.add_metric(labels, log_.log_start_offset)
            end.add_metric(labels, log_.log_end_offset)
            segments.add_metric(labels, len(log_.segments))
        yield from (size, start, end, segments)
        free, total = self._disk_families()
        if self.data_dir is not None:
            try:
                usage = shutil.disk_usage(self.data_dir)
            except OSError as exc:
                # An unreadable data dir must not take the whole scrape down with it; the
                # absent samples are what an "absent(...)" alert sees.
                log.warning("cannot read disk usage of %s: %s", self.data_dir, exc)
            else:
                free.add_metric([], usage.free)
                total.add_metric([], usage.total)
        yield from (free, total)
