"""Broker metrics, named as Strimzi's JMX-exporter rules name Kafka's, so dashboards carry over.

Own metrics use the ``pafka_`` prefix and base units (seconds, bytes).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class BrokerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
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

    def bind_partition_gauges(
        self, partitions: Callable[[], int], leaders: Callable[[], int], urp: Callable[[], int]
    ) -> None:
        self.partition_count.set_function(partitions)
        self.leader_count.set_function(leaders)
        self.under_replicated.set_function(urp)
