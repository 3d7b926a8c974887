"""Broker metrics, named as Strimzi's JMX-exporter rules name Kafka's, so dashboards carry over.

Own metrics use the ``pafka_`` prefix and base units (seconds, bytes). Requests and errors are
labelled with Kafka's own API and error names (``Produce``, ``NOT_LEADER_OR_FOLLOWER``), as
Kafka's RequestMetrics MBeans are. Label children of the per-request series are cached: a label
lookup hashes and takes a lock, which the hot path should pay once per API, not per request.
Per-partition log metrics are read at scrape time (``log_metrics``), never per append, and so
are the log cleaner's (``cleaner_metrics``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from pafka.build_info import register_build_info
from pafka.protocol.messages import ApiKey
from services.broker.cleaner_metrics import CleanerCollector
from services.broker.log_metrics import LogCollector
from services.broker.metric_names import api_name, error_name

if TYPE_CHECKING:
    from services.broker.fetch_session_cache import FetchSessionCache
    from services.broker.partition import Partition

# Kafka requests take from well under a millisecond (metadata, a produce with acks=1) to a
# long-poll fetch's max wait or an acks=all produce's replication timeout (seconds).
REQUEST_SECONDS_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip


class _HostedTopicSeries(Collector):
    """Gives every hosted topic its per-topic counters at scrape time, before they are read.

    Kafka creates a topic's BrokerTopicMetrics meters when the broker starts hosting it, so a
    healthy topic reports 0 failed requests rather than nothing: a dashboard shows "0", not
    "No data", and a rate over it is a series an alert can compare. Registered ahead of the
    counters, so the registry collects it (and the children it adds) first; it yields nothing.
    """

    def __init__(self) -> None:
        self.counters: tuple[Counter, ...] = ()
        self.topics: Callable[[], Iterable[str]] = tuple
        self._initialised: set[str] = set()

    def collect(self) -> Iterator[Metric]:
        for topic in set(self.topics()) - self._initialised:
            for counter in self.counters:
                counter.labels(topic)
            self._initialised.add(topic)
        return iter(())


class TopicCounters(NamedTuple):
    messages_in: Any
    bytes_in: Any
    bytes_out: Any


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self._hosted_topics = _HostedTopicSeries()
        r.register(self._hosted_topics)
        self.messages_in = Counter(
            "kafka_server_brokertopicmetrics_messagesin",
            "Records appended by produce requests",
            ["topic"],
            registry=r,
        )
        self.bytes_in = Counter(
            "kafka_server_brokertopicmetrics_bytesin",
            "Bytes appended by produce requests",
            ["topic"],
            registry=r,
        )
        self.bytes_out = Counter(
            "kafka_server_brokertopicmetrics_bytesout",
            "Record bytes served to fetch requests",
            ["topic"],
            registry=r,
        )
        # Kafka's ProduceMessageConversionsPerSec / FetchMessageConversionsPerSec: records
        # converted between message formats (legacy producers and consumers).
        self.produce_conversions = Counter(
            "kafka_server_brokertopicmetrics_producemessageconversions",
            "Records of legacy produce requests converted to v2 batches",
            ["topic"],
            registry=r,
        )
        self.fetch_conversions = Counter(
            "kafka_server_brokertopicmetrics_fetchmessageconversions",
            "Records converted to a legacy message format for old fetch requests",
            ["topic"],
            registry=r,
        )
        self.failed_produce = Counter(
            "kafka_server_brokertopicmetrics_failedproducerequests",
            "Produce partition requests answered with an error",
            ["topic"],
            registry=r,
        )
        self.failed_fetch = Counter(
            "kafka_server_brokertopicmetrics_failedfetchrequests",
            "Fetch partition requests answered with an error",
            ["topic"],
            registry=r,
        )
        self._hosted_topics.counters = (
            self.messages_in,
            self.bytes_in,
            self.bytes_out,
            self.produce_conversions,
            self.fetch_conversions,
            self.failed_produce,
            self.failed_fetch,
        )
        self.requests = Counter(
            "kafka_network_requestmetrics_requests",
            "Requests received, by API and version",
            ["request", "version"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "pafka_broker_request_duration_seconds",
            "Time from a request's arrival to its response being queued",
            ["request"],
            buckets=REQUEST_SECONDS_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "kafka_network_requestmetrics_errors",
            "Error codes carried by responses, by API and Kafka error name (NONE not counted)",
            ["request", "error"],
            registry=r,
        )
        self.connections = Gauge(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections",
            registry=r,
        )
        self.protocol_errors = Counter(
            "pafka_broker_protocol_errors",
            "Connections closed because of malformed frames or requests",
            registry=r,
        )
        # Kafka's socket-server-metrics successful/failed-authentication-total per listener.
        self.authentications = Counter(
            "kafka_server_socket_server_metrics_authentication",
            "SASL authentications by listener and outcome",
            ["listener", "outcome"],
            registry=r,
        )
        self.partition_count = Gauge(
            "kafka_server_replicamanager_partitioncount",
            "Partitions hosted by this broker",
            registry=r,
        )
        self.leader_count = Gauge(
            "kafka_server_replicamanager_leadercount",
            "Partitions this broker leads",
            registry=r,
        )
        self.under_replicated = Gauge(
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Led partitions whose ISR is smaller than their replica set",
            registry=r,
        )
        self.under_min_isr = Gauge(
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Led partitions whose ISR is smaller than their topic's min.insync.replicas",
            registry=r,
        )
        self.isr_shrinks = Counter(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions this broker leads (one per change, however many left)",
            registry=r,
        )
        self.isr_expands = Counter(
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions of partitions this broker leads (one per change)",
            registry=r,
        )
        self.partitions_fenced = Gauge(
            "pafka_broker_partitions_fenced",
            "Partitions led here that refuse acks=all writes with NOT_ENOUGH_REPLICAS: "
            "ZooKeeper unreachable and no in-sync follower caught up within "
            "replica.lag.time.max.ms",
            registry=r,
        )
        self.zk_session_state = Gauge(
            "pafka_broker_zookeeper_connected",
            "1 while the ZooKeeper session is connected",
            registry=r,
        )
        self.controller_epoch = Gauge(
            "pafka_broker_controller_epoch",
            "Highest controller epoch this broker has accepted",
            registry=r,
        )

        self.fetch_sessions = Gauge(
            "kafka_server_fetchsessioncache_numincrementalfetchsessions",
            "Incremental fetch sessions (KIP-227) in the broker's cache",
            registry=r,
        )
        self.fetch_session_partitions = Gauge(
            "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
            "Partitions held by all cached incremental fetch sessions",
            registry=r,
        )
        self.fetch_session_evictions = Counter(
            "kafka_server_fetchsessioncache_incrementalfetchsessionevictions",
            "Fetch sessions evicted from the cache (to make room, or unused too long)",
            registry=r,
        )

        self.logs = LogCollector()
        r.register(self.logs)
        self.cleaner = CleanerCollector()
        r.register(self.cleaner)
        # process_open_fds and process_max_fds (each hosted partition holds a descriptor), with
        # the process's CPU and memory, read from /proc at scrape time.
        ProcessCollector(registry=r)
        register_build_info(r, "broker")
        self._request_children: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._error_children: dict[tuple[int, int], Any] = {}
        self._topic_children: dict[str, TopicCounters] = {}

    def topic_counters(self, topic: str) -> TopicCounters:
        """A topic's records-in, bytes-in and bytes-out counters, looked up once (a label
        lookup hashes and locks, several times per partition of every request otherwise; a
        topic's series are never removed)."""
        found = self._topic_children.get(topic)
        if found is None:
            found = TopicCounters(
                self.messages_in.labels(topic),
                self.bytes_in.labels(topic),
                self.bytes_out.labels(topic),
            )
            self._topic_children[topic] = found
        return found

    def request_children(self, api_key: int, api_version: int) -> tuple[Any, Any]:
        """The request counter and latency histogram children of one API version."""
        key = (api_key, api_version)
        children = self._request_children.get(key)
        if children is None:
            name = api_name(api_key)
            children = (
                self.requests.labels(name, str(api_version)),
                self.request_seconds.labels(name),
            )
            self._request_children[key] = children
        return children

    def count_authentication(self, listener: str, succeeded: bool) -> None:
        self.authentications.labels(listener, "successful" if succeeded else "failed").inc()

    def count_error(self, api_key: int, code: int) -> None:
        """One error code carried by a response of ``api_key``; 0 (NONE) is not counted."""
        if code == 0:
            return
        key = (api_key, code)
        child = self._error_children.get(key)
        if child is None:
            child = self.errors.labels(api_name(api_key), error_name(code))
            self._error_children[key] = child
        child.inc()

    def produce_failed(self, topic: str, code: int) -> None:
        self.failed_produce.labels(topic).inc()
        self.count_error(ApiKey.PRODUCE, code)

    def fetch_failed(self, topic: str, code: int) -> None:
        self.failed_fetch.labels(topic).inc()
        self.count_error(ApiKey.FETCH, code)

    def count_isr_change(self, old: Iterable[int], new: Iterable[int]) -> None:
        """A led partition's ISR went from ``old`` to ``new`` (either may be a no-op)."""
        before, after = set(old), set(new)
        if before - after:
            self.isr_shrinks.inc()
        if after - before:
            self.isr_expands.inc()

    def bind_fetch_sessions(self, cache: FetchSessionCache) -> None:
        """Read the fetch session cache's size at scrape time."""
        self.fetch_sessions.set_function(lambda: len(cache))
        self.fetch_session_partitions.set_function(cache.partitions_cached)

    def bind_partitions(
        self, partitions: Callable[[], Iterable[Partition]], data_dir: Path
    ) -> None:
        """Read the hosted partitions (and the data dir's disk) at scrape time."""
        self._hosted_topics.topics = lambda: (p.topic for p in partitions())
        self.partition_count.set_function(lambda: sum(1 for _ in partitions()))
        self.leader_count.set_function(lambda: sum(p.is_leader for p in partitions()))
        self.partitions_fenced.set_function(
            lambda: sum(p.fenced_why is not None for p in partitions())
        )
        self.under_replicated.set_function(
            lambda: sum(p.is_leader and len(p.isr) < len(p.replicas) for p in partitions())
        )
        self.under_min_isr.set_function(
            lambda: sum(
                p.is_leader and len(p.isr) < p.config.min_insync_replicas for p in partitions()
            )
        )
        self.logs.bind(partitions, data_dir)
